"""The `ondeck` command. `run` maps errors to exit codes once for every command:
0 ok, 1 internal error, 2 invalid input, 3 conflict, 4 not found, 5 unavailable (the
database; systemd, for `ondeck service`).
Every failure is one line on stderr; `ONDECK_DEBUG=1` adds the traceback of internal errors.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hooks' start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

# The hooks an agent runs: at every session start and end, and at every turn (stop); another
# agent than Claude Code names itself (`--agent codex|gemini-cli`, sessions/capture/agents.py).
HOOKS = ("session-start", "stop", "post-compact", "session-end")
# What the Claude Code mod asks `ondeck hook` for besides its events (hooks/mod_answer.py).
MOD_ONLY = ("brief",)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "hook" and args[1] in MOD_ONLY:
        _hook(args[1])
    if len(args) in (2, 4) and args[0] == "hook" and args[1] in HOOKS:
        if len(args) == 2:
            _hook(args[1])
        from ondeck.sessions.capture.agents import AGENTS

        if args[2] == "--agent" and args[3] in AGENTS:
            _hook(args[1], args[3])
    if args == ["mcp"]:
        proxied = _mcp_client()
        if proxied is not None:
            sys.exit(proxied)
    sys.exit(_whole_process(args))


def _whole_process(args: list[str]) -> int:
    """`run` as a process of its own, without Python's housekeeping where it finds nothing
    (as `_hook` says): no cyclic collection while the modules and Typer's command are built,
    those objects then frozen out of every later collection, the command's own work collected
    as usual, and at exit nothing left for the interpreter's last collection to walk. A
    fifth of a short command's CPU (bench/cli_startup.py). Only the process's entry: a
    frozen object is never freed, which a long-lived caller of `run` cannot afford."""
    import gc

    gc.disable()
    from ondeck.entrypoints.cli.app import command

    command()
    gc.freeze()
    gc.enable()
    code = run(args)
    gc.freeze()
    return code


def _mcp_client() -> int | None:
    """`ondeck mcp` in client mode, without Typer or the database's settings: it forwards to
    the server (entrypoints/mcp/proxy.py) and must import neither SQLAlchemy nor a driver.
    None when this machine is not a client (or its settings need the full check's word)."""
    from ondeck.host.quick_settings_read import load_hook_config

    try:
        config = load_hook_config()
    except Exception:  # the full settings say what is wrong, through Typer's path
        return None
    if not config.server_url:
        return None
    from ondeck.core.errors import OndeckError
    from ondeck.entrypoints.mcp.proxy import serve_proxy

    try:
        return serve_proxy(config)
    except OndeckError as exc:
        _fail(exc.message)
        return exc.exit_code


def _hook(verb: str, agent: str = "claude-code") -> NoReturn:
    """Runs at every agent session start and end and every turn, so it skips Typer and
    answers straight away.

    Its whole-process time is what an agent waits for, and in a process this short Python's
    own housekeeping is a large share of it: cyclic garbage collection runs dozens of times
    while SQLAlchemy and pydantic build their classes (and finds nothing to free), and the
    interpreter's shutdown then tears every module down one by one. The process does neither:
    it collects nothing, and once its answer is flushed it ends with `os._exit` (the engine
    is already disposed, and nothing else holds work to finish). Nor does pydantic look for
    plugins in every installed distribution's metadata to validate the settings.
    """
    if os.environ.get("ONDECK_MOD") == "1":
        # The ondeck mod has this session (it set this in Claude Code's environment, which the
        # settings hooks inherit): one path per session, so a settings hook stands down.
        os._exit(0)
    import gc

    gc.disable()
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from ondeck.entrypoints.hooks import verbs as hooks

    if verb == "session-start":
        code = hooks.session_start(sys.stdin, sys.stdout, agent=agent)
    elif verb == "brief":
        from ondeck.entrypoints.hooks.mod_answer import brief_verb

        code = brief_verb(sys.stdout)
    else:
        code = hooks.run_hook(verb, sys.stdin, sys.stdout, agent=agent)
    for stream in (sys.stdout, sys.stderr):
        # A reader that went away is told nothing more; the exit code stands. (Not
        # `contextlib.suppress`: nothing else on the hooks' server path imports contextlib.)
        try:  # noqa: SIM105
            stream.flush()
        except (OSError, ValueError):
            pass
    if hooks.AFTER:
        _after_answer(hooks.AFTER)
    os._exit(code)


def _after_answer(work: list[Callable[[], None]]) -> None:
    """Run what a hook left for after its answer in a child of its own session, its standard
    streams on /dev/null: Claude Code waits for the hook's exit and the end of its output,
    not for this. Where fork fails, here and now."""
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid > 0:
        return
    try:
        if pid == 0:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
        for job in work:
            job()
    except Exception:  # nobody is left to tell; what was not sent waits in the spool
        pass
    finally:
        if pid == 0:
            os._exit(0)


def run(args: list[str]) -> int:
    from ondeck.entrypoints.cli.app import command
    from ondeck.entrypoints.cli.common import dispose_engines

    try:
        return _run(command(), args)
    finally:
        dispose_engines()


def _run(app: object, args: list[str]) -> int:
    import typer

    from ondeck.core.errors import OndeckError

    try:
        # `app` is the click command of the Typer app (typed `object` so this module never
        # imports typer's types).
        result = app(args=args, prog_name="ondeck", standalone_mode=False)  # type: ignore[operator]
    except OndeckError as exc:
        _fail(exc.message)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        _fail("aborted")
        return 130
    except Exception as exc:
        # Typer's (vendored click) usage errors: bad option, missing argument, bad value.
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            _fail(exc.format_message())
            return 2 if exc.exit_code in (1, 2) else int(exc.exit_code)
        if os.environ.get("ONDECK_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (ONDECK_DEBUG=1 shows the traceback)")
        return 1
    return result if isinstance(result, int) else 0


def _fail(message: str) -> None:
    from ondeck.core.terminal import visible  # a message may quote what was stored or typed

    line = visible(" ".join(str(message).split()))
    sys.stderr.write(f"ondeck: error: {line}\n")
