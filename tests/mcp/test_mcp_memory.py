"""The memory tools through the official client over stdio (`ondeck mcp` as a subprocess
started in the agent's directory), on both stores: typed results, refusals as tool errors
with the reason, and the directory's side the only one ever read or written."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from conftest import NOW
from mcp import Client
from ondeck.db.tables import notes
from ondeck.memory import notes as notes_svc
from support.hooks import new_repo
from support.mcp_stdio import params
from support.memory import make_session

MEMORY_TOOLS = {
    "recall",
    "remember",
    "write_handoff",
    "supersede_note",
    "mark_note_wrong",
    "list_notes",
}


def seed(engine: Engine, repo: Path) -> dict[str, Any]:
    from zoneinfo import ZoneInfo

    sides = {"work": [], "personal": []}
    with engine.begin() as conn:
        mine = notes_svc.add_note(
            conn, NOW, text="personal: deploy the blog on Sunday", side="personal",
            project="api", sides=sides, zone=ZoneInfo("UTC"), pinned=True, actor="t",
        )  # fmt: skip
        # Heard from just now: the MCP server runs on the real clock, and a session silent
        # past the grace is lost, not the open session of this directory.
        session = make_session(
            conn, datetime.now(UTC), external_id="agent-session-0001", side="work",
            project="api", status="open", cwd=str(repo),
        )  # fmt: skip
    return {"personal": mine.id, "session": session}


async def _memory_session(client: Client, seeded: dict[str, Any]) -> dict[str, Any]:
    listed = await client.list_tools()
    got: dict[str, Any] = {"names": {t.name for t in listed.tools}, "tools": listed.tools}
    call = client.call_tool
    got["remember"] = await call("remember", {"text": "deploy window is 10:00 KST 배포"})
    got["decision"] = await call(
        "remember", {"text": "we deploy on Thursdays", "kind": "decision", "pinned": True}
    )
    got["bad_text"] = await call("remember", {"text": ""})
    got["bad_kind"] = await call("remember", {"text": "x", "kind": "handoff"})
    got["recall"] = await call("recall", {"query": "deploy"})
    got["recall_ko"] = await call("recall", {"query": "배포"})
    got["recall_short"] = await call("recall", {"query": "d"})
    decision = got["decision"].structured_content["id"]
    got["supersede"] = await call(
        "supersede_note", {"note_id": decision, "text": "we deploy on Wednesdays"}
    )
    got["wrong"] = await call(
        "mark_note_wrong",
        {"note_id": got["remember"].structured_content["id"], "reason": "it is 11:00 now"},
    )
    got["wrong_again"] = await call(
        "mark_note_wrong",
        {"note_id": got["remember"].structured_content["id"], "reason": "still"},
    )
    got["cross_side"] = await call(
        "mark_note_wrong", {"note_id": seeded["personal"], "reason": "not yours"}
    )
    got["list"] = await call("list_notes", {})
    got["list_all"] = await call("list_notes", {"include_all": True})
    got["handoff"] = await call("write_handoff", {"text": "next: the dashboard"})
    got["handoff_again"] = await call(
        "write_handoff", {"text": "next: export", "session": "agent-session-0001"}
    )
    got["context"] = await call("get_context", {})
    return got


def test_every_memory_tool_over_stdio(engine: Engine, db_url: str, tmp_path: Path) -> None:
    work, own = tmp_path / "work", tmp_path / "own"
    repo = new_repo(work / "api")
    own.mkdir()
    seeded = seed(engine, repo)
    sides = {"work": [str(work)], "personal": [str(own)]}

    async def main() -> dict[str, Any]:
        async with Client(params(db_url, repo, sides)) as client:
            return await _memory_session(client, seeded)

    got = asyncio.run(main())
    assert got["names"] >= MEMORY_TOOLS
    schema = next(t for t in got["tools"] if t.name == "recall").output_schema
    assert "results" in schema["properties"]
    note = got["remember"].structured_content
    assert (note["side"], note["project"], note["origin"]) == (
        "work", "api", "agent:agent-session-0001",
    )  # fmt: skip
    assert got["bad_text"].is_error and "must not be empty" in got["bad_text"].content[0].text
    assert got["bad_kind"].is_error
    found = got["recall"].structured_content["results"]
    assert {r["id"] for r in found} == {note["id"], got["decision"].structured_content["id"]}
    assert all("blog" not in r["snippet"] for r in found)
    # The Korean word finds its English one too (memory/recall_glossary.py), and says so.
    found_ko = {r["id"]: r for r in got["recall_ko"].structured_content["results"]}
    assert set(found_ko) == {note["id"], got["decision"].structured_content["id"]}
    why = found_ko[got["decision"].structured_content["id"]]["matched"]
    assert [(m["word"], m["forms"]) for m in why] == [("배포", ["deploy"])]
    assert all(r["score"] > 0 for r in found_ko.values())
    short = got["recall_short"]
    assert short.is_error and "nothing to look for" in short.content[0].text
    replaced = got["supersede"].structured_content
    assert replaced["superseded"]["status"] == "superseded"
    assert replaced["note"]["supersedes"] == got["decision"].structured_content["id"]
    assert got["wrong"].structured_content["status"] == "wrong"
    assert (
        got["wrong_again"].is_error and "already marked wrong" in got["wrong_again"].content[0].text
    )
    assert got["cross_side"].is_error and "not_found" in got["cross_side"].content[0].text
    listed = [n["id"] for n in got["list"].structured_content["notes"]]
    assert listed == [replaced["note"]["id"]]
    assert len(got["list_all"].structured_content["notes"]) == 3
    handoff = got["handoff"].structured_content
    assert handoff["replaced"] is False and handoff["note"]["session_id"] == seeded["session"]
    assert handoff["note"]["head"] and handoff["note"]["branch"] == "main"
    assert got["handoff_again"].structured_content["replaced"] is True
    context = got["context"].structured_content
    assert "next: export" in context["markdown"] and "not instructions" in context["markdown"]
    assert "we deploy on Wednesdays" in context["markdown"]
    assert "blog" not in context["markdown"] and "blog" not in json.dumps(context["data"])
    with engine.connect() as conn:
        sides_written = set(conn.execute(select(notes.c.side)).scalars())
    assert sides_written == {"work", "personal"}


def test_an_unclassified_directory_is_shown_no_memory(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    (tmp_path / "work").mkdir()
    elsewhere = new_repo(tmp_path / "elsewhere")
    seed(engine, elsewhere)
    sides = {"work": [str(tmp_path / "work")], "personal": [str(tmp_path / "own")]}

    async def main() -> list[Any]:
        async with Client(params(db_url, elsewhere, sides)) as client:
            return [
                await client.call_tool("recall", {"query": "deploy"}),
                await client.call_tool("remember", {"text": "x"}),
                await client.call_tool("list_notes", {}),
                await client.call_tool("get_context", {}),
            ]

    recalled, remembered, listed, context = asyncio.run(main())
    for refused in (recalled, remembered, listed):
        assert refused.is_error and "belongs to no side" in refused.content[0].text
    assert "blog" not in context.structured_content["markdown"]
    assert "unclassified" in context.structured_content["markdown"]


@pytest.mark.parametrize("ask", ["write_handoff"])
def test_a_handoff_needs_a_session(engine: Engine, db_url: str, tmp_path: Path, ask: str) -> None:
    repo = new_repo(tmp_path / "work" / "api")

    async def main() -> Any:
        sides = {"work": [str(tmp_path / "work")]}
        async with Client(params(db_url, repo, sides)) as client:
            return await client.call_tool(ask, {"text": "words"})

    answer = asyncio.run(main())
    assert answer.is_error and "name your session" in answer.content[0].text
