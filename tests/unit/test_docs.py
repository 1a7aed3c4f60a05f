"""The README and the pages under docs/ stay true: the README is a short entry that opens
with the two commands, every link leads somewhere, and every command, option and setting
the pages name exists."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

from ondeck.entrypoints.cli.app import app
from ondeck.host.settings import Settings

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = sorted((REPO / "docs").glob("*.md"))
README_LIMIT = 12_000
# Variables ondeck reads that are not fields of the settings class: the settings file's own
# path, and the traceback switch (entrypoints/cli/__init__.py).
NOT_FIELDS = {"ONDECK_CONFIG", "ONDECK_DEBUG"}
GLOBAL_OPTIONS = {"--db", "--server", "--version", "--help"}


def _documents() -> list[Path]:
    return [README, *PAGES]


def _fenced_lines(text: str) -> Iterator[tuple[str, str]]:
    """(the block's language, line) for each line of a fenced block."""
    language: str | None = None
    for line in text.splitlines():
        if line.startswith("```"):
            language = line[3:].strip() if language is None else None
        elif language is not None:
            yield language, line


def test_the_readme_is_a_short_entry() -> None:
    size = len(README.read_text())
    assert size <= README_LIMIT, f"README.md is {size} characters; keep it under {README_LIMIT}"


def test_the_readme_opens_with_the_two_commands() -> None:
    """On a fresh machine, `make run` and `make test` do everything: they come first."""
    lines = README.read_text().splitlines()
    assert lines[0].startswith("# ")
    body = [line for line in lines[1:] if line.strip()]
    assert body[0] == "```sh", "the first thing after the title is the commands' block"
    assert body[1].startswith("make run ")
    assert body[2].startswith("make test ")
    assert body[3] == "```"


@pytest.mark.parametrize("doc", _documents(), ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file_and_a_heading(doc: Path) -> None:
    text = doc.read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        assert file.exists(), f"{doc.name}: {target} leads nowhere"
        if anchor and file.suffix == ".md":
            assert anchor in _anchors(file.read_text()), f"{doc.name}: no heading for {target}"


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as dashes."""
    headings = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def _cli() -> Any:
    return typer.main.get_command(app)


def _command_lines() -> Iterator[tuple[str, str]]:
    """(document, command line) for each `ondeck …` line of a shell block, each
    `$ ondeck …` line of a transcript (the other lines of which are what it printed), and
    each inline `ondeck …`."""
    for doc in _documents():
        for language, line in _fenced_lines(doc.read_text()):
            line = line.strip()
            if language != "sh" and not line.startswith("$ "):
                continue
            line = line.removeprefix("$ ").removeprefix("sudo ")
            if line.startswith("ondeck "):
                yield doc.name, line.split("#", 1)[0]
        for span in re.findall(r"`(ondeck [^`]+)`", doc.read_text()):
            yield doc.name, span


def test_the_pages_show_commands() -> None:
    assert len(list(_command_lines())) > 40


@pytest.mark.parametrize(("doc", "line"), list(_command_lines()))
def test_every_documented_command_and_option_exists(doc: str, line: str) -> None:
    words = re.findall(r'"[^"]*"|\S+', line)[1:]
    commands = [_cli()]
    # `note show|pin|unpin ID` names three commands at once.
    while words and re.fullmatch(r"[a-z][a-z-]*(\|[a-z][a-z-]*)*", words[0]):
        groups = [c.commands for c in commands if getattr(c, "commands", None)]
        if not groups:
            break
        names = words.pop(0).split("|")
        for group in groups:
            for name in names:
                assert name in group, f"{doc}: `{line}`: no command {name}"
        commands = [group[name] for group in groups for name in names]
    if any(getattr(c, "commands", None) for c in commands):
        # A group named alone (`ondeck service`), or with a placeholder (`ondeck hook VERB`).
        assert not words or words[0] in GLOBAL_OPTIONS or words[0].isupper(), f"{doc}: `{line}`"
    options = {o for c in commands for param in c.params for o in param.opts} | GLOBAL_OPTIONS
    for word in words:
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", word.split("=", 1)[0]):
            assert flag in options, f"{doc}: `{line}`: no option {flag}"


def test_every_setting_the_pages_name_exists() -> None:
    known = {f"ONDECK_{name.upper()}" for name in Settings.model_fields} | NOT_FIELDS
    tests = " ".join(p.read_text() for p in (REPO / "tests").rglob("*.py"))
    for doc in _documents():
        for name in set(re.findall(r"ONDECK_[A-Z_]*[A-Z]", doc.read_text())):
            assert name in known or name in tests, f"{doc.name} names {name}, which nothing reads"


def _settings_files() -> Iterator[tuple[str, str]]:
    for doc in _documents():
        for block in re.findall(r"```toml\n(.*?)```", doc.read_text(), re.S):
            if block.startswith("# ~/.config/ondeck/config.toml"):
                yield doc.name, block


def test_the_pages_show_settings_files() -> None:
    assert {doc for doc, _ in _settings_files()} >= {"configuration.md", "sessions.md"}


@pytest.mark.parametrize(("doc", "block"), list(_settings_files()))
def test_every_settings_file_shown_is_read_as_it_says(
    doc: str, block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key written after a [table] belongs to that table: an example must load."""
    import tomllib

    from ondeck.host.settings import load_settings

    for name in [key for key in os.environ if key.upper().startswith("ONDECK_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    file = tmp_path / "config.toml"
    file.write_text(block)
    monkeypatch.setenv("ONDECK_CONFIG", str(file))
    settings = load_settings()
    for key, value in tomllib.loads(block).items():
        assert getattr(settings, key) is not None, f"{doc}: {key}"
        if isinstance(value, list):
            assert len(getattr(settings, key)) == len(value), f"{doc}: {key}"


def test_every_screenshot_is_shown() -> None:
    """A picture no page shows is a stale one: remove it, or show it."""
    shown = " ".join(doc.read_text() for doc in _documents())
    for picture in sorted((REPO / "docs" / "screenshots").glob("*.png")):
        assert f"screenshots/{picture.name}" in shown, f"{picture.name} is shown nowhere"
