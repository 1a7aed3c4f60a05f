"""Every dashboard form with a date field refuses dates it cannot carry, says why on the
page, and writes nothing.

The forms are found by reading the pages themselves (every `<input type="date">` in a form,
and every button that sends that form somewhere else), so a form added later is held to the
same rules.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser
from typing import Any

from sqlalchemy import Engine, func, select

from ondeck.db.tables import events, schedules, tasks
from support.bad_inputs import BAD_DATES, EDGE_DATES

PAGES = [
    "/",
    "/tasks",
    "/tasks/1",
    "/schedules",
    "/schedules/1",
    "/schedules/rule-preview?rule=daily",
    "/activity",
    "/system",
]
SAMPLES = {"title": "x", "rule": "weekly:MON"}


class _Forms(HTMLParser):
    """Each form's submissions: (method, action, {field: value}, [date fields])."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []
        self._form: dict[str, Any] | None = None
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._form = {
                "method": a.get("method", "get").lower(),
                "action": a.get("action", ""),
                "fields": {},
                "dates": [],
                "buttons": [],
            }
            self.forms.append(self._form)
        if self._form is None:
            return
        name = a.get("name")
        if tag == "input" and name:
            self._form["fields"][name] = a.get("value", "")
            if a.get("type") == "date":
                self._form["dates"].append(name)
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select:
            fields = self._form["fields"]
            if self._select not in fields or "selected" in a:
                fields[self._select] = a.get("value", "")
        elif tag == "textarea" and name:
            self._textarea = name
            self._form["fields"][name] = ""
        elif tag == "button" and "formaction" in a:
            self._form["buttons"].append((a.get("formmethod", "get").lower(), a["formaction"]))

    def handle_data(self, data: str) -> None:
        if self._form is not None and self._textarea:
            self._form["fields"][self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def _submissions(dash: Any) -> list[tuple[str, str, str, dict[str, str], str]]:
    found = []
    for page in PAGES:
        response = dash.get(page)
        assert response.status_code == 200, (page, response.text)
        parser = _Forms()
        parser.feed(response.text)
        for form in parser.forms:
            fields = {k: v or SAMPLES.get(k, v) for k, v in form["fields"].items()}
            for field in form["dates"]:
                routes = [(form["method"], form["action"]), *form["buttons"]]
                for method, action in routes:
                    found.append((page, method, action, fields, field))
    return found


def _send(dash: Any, method: str, action: str, fields: dict[str, str], field: str, value: str):
    data = {**fields, field: value}
    if method == "post":
        return dash.client.post(action, data=data)
    return dash.client.get(action, params=data)


def _counts(engine: Engine) -> tuple[int, ...]:
    with engine.connect() as conn:
        return tuple(
            conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (events, tasks, schedules)
        )


def _seed(dash: Any) -> None:
    for action, data in (
        ("/tasks", {"title": "held"}),
        ("/schedules", {"title": "weekly", "rule": "weekly:MON", "kind": "task"}),
    ):
        assert dash.post(action, data).status_code in (200, 303), action


def test_every_date_field_refuses_dates_it_cannot_carry(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    _seed(dash)
    submissions = _submissions(dash)
    names = {(method, action.split("/")[1], field) for _, method, action, _, field in submissions}
    # Not vacuous: the forms we know are among those found.
    assert {
        ("post", "tasks", "due_on"),
        ("post", "schedules", "start_on"),
        ("get", "schedules", "start_on"),
    } <= names, names
    before = _counts(engine)
    for page, method, action, fields, field in submissions:
        for value, expected in BAD_DATES:
            response = _send(dash, method, action, fields, field, value)
            text = html.unescape(response.text)
            where = (page, method, action, field, value)
            assert response.status_code < 500, where
            assert expected in text, (*where, dash.flash(response.text))
            if method == "post":
                assert response.status_code == 422, where
    assert _counts(engine) == before, "a refused date writes nothing"


def test_every_date_field_takes_the_edges_of_the_range(dash, engine: Engine) -> None:  # type: ignore[no-untyped-def]
    _seed(dash)
    for page, method, action, fields, field in _submissions(dash):
        for value in EDGE_DATES:
            response = _send(dash, method, action, fields, field, value)
            assert response.status_code in (200, 303), (page, action, field, value)
            assert "out of range" not in html.unescape(response.text)
