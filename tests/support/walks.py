"""What a surface offers, read from the surface itself, for the walks that try every input:
the API's OpenAPI document and the CLI's commands. An input added later is walked too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ondeck.db.engine import make_engine
from ondeck.entrypoints.api.app import create_app
from ondeck.host.settings import load_settings


def openapi_document(tmp: Path | str) -> dict[str, Any]:
    """The app's OpenAPI document (an app on a scratch SQLite database in `tmp`)."""
    settings = load_settings(database_url=f"sqlite:///{tmp}/doc.db", tz="UTC", data_dir=tmp)
    engine = make_engine(settings.url)
    try:
        document: dict[str, Any] = create_app(settings, engine).openapi()
        return document
    finally:
        engine.dispose()


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The schema a `$ref` names, or the schema itself."""
    if "$ref" in schema:
        found: dict[str, Any] = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        return found
    return schema


def cli_commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(the words that name it, the click command) for every command below `command`."""
    subcommands = getattr(command, "commands", None)
    if subcommands:
        for name, sub in subcommands.items():
            yield from cli_commands(sub, (*path, name))
    else:
        yield path, command
