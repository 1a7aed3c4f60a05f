"""`ondeck serve`: binding, TLS, the owner socket, who a loopback peer is, and the server as a
systemd unit.
"""
