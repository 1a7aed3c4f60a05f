"""The `ondeck` command. `run` maps errors to exit codes once for every command:
0 ok, 1 internal error, 2 invalid input, 3 conflict, 4 not found, 5 database unavailable.
Every failure is one line on stderr; `ONDECK_DEBUG=1` adds the traceback of internal errors.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:2] == ["hook", "session-start"] and len(args) == 2:
        # Runs at every agent session start: skip Typer and answer straight away.
        from ondeck.hooks import session_start

        sys.exit(session_start(sys.stdin, sys.stdout))
    sys.exit(run(args))


def run(args: list[str]) -> int:
    from ondeck.cli.app import app
    from ondeck.cli.common import dispose_engines

    try:
        return _run(app, args)
    finally:
        dispose_engines()


def _run(app: object, args: list[str]) -> int:
    import typer

    from ondeck.errors import OndeckError

    try:
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
    line = " ".join(str(message).split())
    sys.stderr.write(f"ondeck: error: {line}\n")
