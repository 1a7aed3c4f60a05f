"""`ondeck serve --ssl-certfile --ssl-keyfile`: HTTPS from the server itself, with a real
self-signed certificate; files it cannot use are one line, exit 2, before binding."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ondeck.entrypoints.cli import run
from support.pg import free_port

ONDECK = str(Path(sys.executable).with_name("ondeck"))


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key, as PEM files."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        if not shutil.which("openssl"):
            pytest.skip("neither the cryptography package nor openssl to make a certificate")
        request = "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2"
        names = "subjectAltName=IP:127.0.0.1,DNS:localhost"
        subprocess.run(
            [
                "openssl",
                *request.split(),
                "-subj",
                "/CN=localhost",
                "-addext",
                names,
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        return cert, key
    import datetime
    import ipaddress

    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(private, hashes.SHA256())
    )
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key


def _wait_for_health(url: str, context: ssl.SSLContext, proc: subprocess.Popen[str]) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:
                return dict(json.loads(response.read()))
        except OSError:
            time.sleep(0.1)
    raise AssertionError("health never answered over https")


@pytest.mark.slow
def test_serve_answers_health_over_https_with_the_given_certificate(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    port = free_port()
    env = {
        **os.environ,
        "ONDECK_DATABASE_URL": f"sqlite:///{tmp_path / 'o.db'}",
        "ONDECK_TZ": "UTC",
    }
    proc = subprocess.Popen(
        [
            ONDECK,
            "serve",
            "--port",
            str(port),
            "--ssl-certfile",
            str(cert),
            "--ssl-keyfile",
            str(key),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        trusting = ssl.create_default_context(cafile=str(cert))
        health = _wait_for_health(f"https://127.0.0.1:{port}/api/v1/health", trusting, proc)
        assert health["database"] == "ok"
        # It is TLS indeed: a client that does not trust the certificate refuses it.
        with pytest.raises(urllib.error.URLError) as refused:
            urllib.request.urlopen(
                f"https://127.0.0.1:{port}/api/v1/health",
                timeout=5,
                context=ssl.create_default_context(),
            )
        assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


@pytest.fixture
def tls_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("ONDECK_DATA_DIR", str(tmp_path / "data"))
    return _self_signed(tmp_path)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing cert", "cannot read it: No such file or directory"),
        ("missing key", "ONDECK_SSL_KEYFILE="),
        ("key without cert", "a key without ONDECK_SSL_CERTFILE"),
        ("not a certificate", "not a PEM certificate"),
        ("the key as certificate", "not a PEM certificate"),
        ("a directory", "cannot read it"),
    ],
)
def test_files_it_cannot_serve_with_are_one_line_and_exit_2_before_binding(
    tls_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    expected: str,
) -> None:
    cert, key = tls_files
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    given = {
        "missing cert": ["--ssl-certfile", str(tmp_path / "none.pem"), "--ssl-keyfile", str(key)],
        "missing key": ["--ssl-certfile", str(cert), "--ssl-keyfile", str(tmp_path / "no.pem")],
        "key without cert": ["--ssl-keyfile", str(key)],
        "not a certificate": ["--ssl-certfile", str(junk), "--ssl-keyfile", str(key)],
        "the key as certificate": ["--ssl-certfile", str(key)],
        "a directory": ["--ssl-certfile", str(tmp_path), "--ssl-keyfile", str(key)],
    }[case]
    # The port is taken: a refusal naming the files, not the port, came before binding.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert run(["serve", "--port", str(port), *given]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ondeck: error: ONDECK_SSL_")
    assert expected in err, err


def test_the_settings_name_the_files_too(
    tls_files: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cert, _ = tls_files
    monkeypatch.setenv("ONDECK_SSL_CERTFILE", str(cert))
    monkeypatch.setenv("ONDECK_SSL_KEYFILE", str(cert.with_name("gone.pem")))
    assert run(["serve", "--port", "1"]) == 2
    assert "ONDECK_SSL_KEYFILE=" in capsys.readouterr().err
