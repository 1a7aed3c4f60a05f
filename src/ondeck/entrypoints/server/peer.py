"""Which user of this machine holds the other end of a loopback TCP connection (Linux).

The kernel lists every TCP socket of the network namespace in /proc/net/tcp and tcp6, with
the user that owns it: the client's socket is the one whose local end is the client's
address and port and whose remote end is the server's port. Read only when it matters (a
wrong token was given from this machine), never on the way of a request that passes.
"""

from __future__ import annotations

import ipaddress

_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
# States in which a socket still has its owner: established, or closing from either side.
# Not TIME_WAIT (06) nor CLOSE (07): the kernel lists those as owned by root.
_OWNED_STATES = frozenset({"01", "04", "05", "08", "09", "0B"})


def is_loopback_address(address: str) -> bool:
    try:
        found = ipaddress.ip_address(address)
    except ValueError:
        return False
    mapped = getattr(found, "ipv4_mapped", None)
    return bool(found.is_loopback or (mapped is not None and mapped.is_loopback))


def peer_uid(client_host: str, client_port: int, server_port: int) -> int | None:
    """The uid owning the client's socket of this connection; None when it is not found
    (another system, or the client already gone)."""
    try:
        wanted = _plain(ipaddress.ip_address(client_host))
    except ValueError:
        return None
    for table in _TABLES:
        try:
            with open(table, encoding="ascii") as handle:
                next(handle, None)  # the header
                for line in handle:
                    fields = line.split()
                    if len(fields) < 8 or fields[3] not in _OWNED_STATES:
                        continue
                    local, remote = fields[1], fields[2]
                    if int(remote.rpartition(":")[2], 16) != server_port:
                        continue
                    host_hex, _, port_hex = local.rpartition(":")
                    if int(port_hex, 16) != client_port or _decode(host_hex) != wanted:
                        continue
                    return int(fields[7])
        except (OSError, ValueError):
            continue
    return None


def _plain(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped if mapped is not None else address


def _decode(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The kernel writes each 32-bit word of an address in the machine's byte order (little
    endian on every machine ondeck runs on)."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    if len(words) == 4:
        return ipaddress.IPv4Address(words)
    return _plain(ipaddress.IPv6Address(words))
