"""`ondeck rule check` and `GET /api/v1/rules/check`: the same answer, or the same reason."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import time_machine
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from ondeck.entrypoints.api.app import create_app
from ondeck.entrypoints.cli import run
from ondeck.host.settings import Settings

WEDNESDAY = datetime(2026, 6, 17, 12, 0, tzinfo=UTC)


@time_machine.travel(WEDNESDAY, tick=False)
def test_cli_prints_canonical_words_and_next_dates(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["rule", "check", "weekly: thu, mon"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "weekly:MON,THU: every Monday and Thursday"
    assert [line.split()[0] for line in out[1:]] == [
        "2026-06-18",
        "2026-06-22",
        "2026-06-25",
        "2026-06-29",
        "2026-07-02",
    ]


@time_machine.travel(WEDNESDAY, tick=False)
def test_cli_json_with_start_and_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["rule", "check", "every:3", "--start", "2026-06-01", "--count", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rule"] == "every:3"
    assert data["description"] == "every 3 days"
    assert data["next"] == ["2026-06-19", "2026-06-22"]
    assert data["rrule"].startswith("DTSTART;VALUE=DATE:20260601")


@time_machine.travel(WEDNESDAY, tick=False)
def test_today_is_the_configured_zones_date(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ONDECK_TZ", "Pacific/Kiritimati")  # UTC+14: already Thursday
    assert run(["rule", "check", "daily", "--count", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["next"] == ["2026-06-18"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["monthly:31"], "not every month has a day 31"),
        (["0 9 * * 1"], "weekly:MON"),
        (["weekly:MOM"], "MOM"),
        (["daily", "--count", "0"], "count 0"),
        (["daily", "--start", "tomorrow"], "YYYY-MM-DD"),
        ([""], "empty"),
    ],
)
def test_cli_refusals_are_one_line_exit_2(
    args: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["rule", "check", *args]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert err.count("\n") == 1


def test_api_answers_the_same(engine: Engine, settings: Settings) -> None:
    with time_machine.travel(WEDNESDAY, tick=False), TestClient(create_app(settings, engine)) as c:
        ok = c.get("/api/v1/rules/check", params={"rule": "monthly:1,15,last", "count": 3})
        bad = c.get("/api/v1/rules/check", params={"rule": "monthly:31"})
        too_many = c.get("/api/v1/rules/check", params={"rule": "daily", "count": 1000})
    assert ok.status_code == 200
    assert ok.json()["rule"] == "monthly:1,15,last"
    assert ok.json()["next"] == ["2026-06-30", "2026-07-01", "2026-07-15"]
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "invalid_rule"
    assert "1 to 28" in bad.json()["error"]["message"]
    assert too_many.status_code == 422
    assert too_many.json()["error"]["code"] == "invalid_input"
