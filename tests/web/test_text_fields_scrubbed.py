"""Every dashboard form field that takes a text stores it scrubbed.

The forms are found by reading the pages themselves (every text `<input>` and `<textarea>`
of a form that posts), so a form added later is walked too; each field gets a text with
secrets in it, and the database is read back, every table and column, with raw SQL. A
refusal (the page says why) stores nothing, which passes too.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from sqlalchemy import Engine

from support.scrub_walk import assert_scrubbed, markers, text_for, token

PAGES = ["/", "/tasks", "/tasks/1", "/schedules", "/schedules/1", "/memory", "/sessions"]
SAMPLES = {"title": "x", "rule": "weekly:MON", "text": "x", "kind": "task"}
NOT_TEXT = {"csrf_token", "rule", "due_on", "start_on", "expires_on", "priority", "q"}
NAMES = {"project", "side", "to_side", "session"}


class _Forms(HTMLParser):
    """Each posting form: (action, {field: value}, [text fields])."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []
        self._form: dict[str, Any] | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._form = {"method": a.get("method", "get").lower(), "action": a.get("action", "")}
            self._form.update(fields={}, texts=[])
            self.forms.append(self._form)
        if self._form is None:
            return
        name = a.get("name")
        if tag == "input" and name:
            self._form["fields"][name] = a.get("value", "")
            if a.get("type", "text") in ("text", "search", "") and name not in NOT_TEXT:
                self._form["texts"].append(name)
        elif tag == "textarea" and name:
            self._form["fields"][name] = ""
            self._form["texts"].append(name)
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select:
            fields = self._form["fields"]
            if not fields.get(self._select) or "selected" in a:
                fields[self._select] = a.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None


def _seed(dash: Any) -> None:
    for action, data in (
        ("/tasks", {"title": "plain"}),
        ("/schedules", {"title": "weekly", "rule": "weekly:MON", "kind": "task"}),
        ("/memory/notes", {"text": "plain"}),
    ):
        assert dash.post(action, data).status_code in (200, 303), action


def _submissions(dash: Any) -> list[tuple[str, str, dict[str, str], str]]:
    found = []
    for page in PAGES:
        response = dash.get(page)
        assert response.status_code == 200, (page, response.text)
        parser = _Forms()
        parser.feed(response.text)
        for form in parser.forms:
            if form["method"] != "post":
                continue
            fields = {k: v or SAMPLES.get(k, v) for k, v in form["fields"].items()}
            for field in form["texts"]:
                found.append((page, form["action"], fields, field))
    return found


def test_every_text_field_of_every_form_is_stored_scrubbed(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    _seed(dash)
    submissions = _submissions(dash)
    names = {(action.split("/")[1], field) for _, action, _, field in submissions}
    assert {("tasks", "title"), ("tasks", "body"), ("schedules", "title")} <= names, names
    assert {("memory", "text")} <= names, names
    before = markers(engine)
    accepted = 0
    for page, action, fields, field in submissions:
        label = f"web {page} {action} {field}"
        value = token(label) if field in NAMES else text_for(label)
        response = dash.post(action, {**fields, field: value})
        assert response.status_code < 500, (label, response.text[:300])
        accepted += response.status_code in (200, 303)
        before = assert_scrubbed(engine, label, before, accepted=False)
    assert accepted >= 5, accepted
