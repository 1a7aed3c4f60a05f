"""Client mode: `ondeck` on a machine with only ONDECK_SERVER_URL and a device
token asks the server, prints what a database here would print, and touches no database."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.machines import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with Server.start(tmp_path_factory.mktemp("server")) as running:
        yield running


def test_the_context_is_the_servers(server: Server, tmp_path: Path) -> None:
    assert server.ondeck("task", "add", "배포 준비", "--due", "2026-01-01").returncode == 0
    laptop = server.client(tmp_path / "laptop", server.token("laptop-ctx"))
    here = laptop.ondeck("context", "--no-brief")
    there = server.ondeck("context", "--no-brief")
    assert here.returncode == 0, here.stderr
    assert "배포 준비" in here.stdout
    # The same lines; only the instant each was made at may differ.
    assert here.stdout.splitlines()[1:] == there.stdout.splitlines()[1:]
    assert not list((tmp_path / "laptop").rglob("*.db")), "no database on the client"


def test_server_side_commands_refuse_in_client_mode(server: Server, tmp_path: Path) -> None:
    laptop = server.client(tmp_path / "laptop", server.token("laptop-refuse"))
    for args in (["backup"], ["db", "upgrade"], ["jobs", "--once"]):
        done = laptop.ondeck(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and "client of" in done.stderr, done.stderr


def test_no_token_and_a_wrong_token_exit_6(server: Server, tmp_path: Path) -> None:
    for token in (None, "odk_not-a-token-0123456789abcdef0123456789abcdef"):
        laptop = server.client(tmp_path / f"laptop-{token}", token)
        done = laptop.ondeck("context")
        assert done.returncode == 6, done.stderr
        assert done.stderr.count("\n") == 1 and server.url in done.stderr
        named = "missing bearer token" if token is None else "not a token of this server"
        assert named in done.stderr, done.stderr


def test_an_unreachable_server_exits_5_naming_it(tmp_path: Path) -> None:
    from support.machines import Machine, home_env
    from support.pg import free_port

    url = f"http://127.0.0.1:{free_port()}"
    laptop = Machine(
        tmp_path,
        home_env(tmp_path, server_url=url, token="odk_x0123456789abcdef0123456789abcdef012345"),
    )
    done = laptop.ondeck("context")
    assert done.returncode == 5, done.stderr
    assert url in done.stderr and "unreachable" in done.stderr
