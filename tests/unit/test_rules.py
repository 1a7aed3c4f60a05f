from __future__ import annotations

import subprocess
import sys
from datetime import date, datetime, time, timedelta

import pytest
from dateutil.rrule import rrulestr
from hypothesis import given, settings
from hypothesis import strategies as st

from ondeck.core.rules import Daily, Every, Monthly, Rule, RuleError, Weekly, parse

# No example database in the repo; no deadline, since brute-force checks walk up to 10 years.
QUICK = settings(database=None, deadline=None, max_examples=150)

MON, TUE, WED, THU, FRI, SAT, SUN = range(7)
NAMES = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
FULL = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
D = date  # short for the tables


def matches(rule: Rule, day: date, start: date) -> bool:
    """Brute-force truth, written apart from the module: is `day` an occurrence?"""
    if day < start:
        return False
    match rule:
        case Daily():
            return True
        case Weekly(days=days):
            return day.weekday() in days
        case Monthly(days=days, last=last):
            return day.day in days or (last and (day + timedelta(days=1)).day == 1)
        case Every(n=n):
            return (day - start).days % n == 0
    raise AssertionError(rule)


def walk(first: date, end: date) -> list[date]:
    """Every day from first to end inclusive."""
    return [first + timedelta(days=i) for i in range((end - first).days + 1)]


# --- strategies --------------------------------------------------------------------------

rules = st.one_of(
    st.just(Daily()),
    st.frozensets(st.integers(0, 6), min_size=1).map(Weekly),
    st.tuples(st.frozensets(st.integers(1, 28), max_size=6), st.booleans()).map(
        lambda t: Monthly(t[0], t[1] or not t[0])
    ),
    st.frozensets(st.integers(1, 28), min_size=1, max_size=28).map(Monthly),
    st.one_of(st.integers(1, 40), st.integers(1, 3650)).map(Every),
)
# 1990-2100 holds leap years, the 2000 leap century and the 2100 non-leap one.
# Half of them near a month's turn, where month lengths and leap days matter.
dates = st.one_of(
    st.dates(D(1990, 1, 1), D(2100, 12, 31)),
    st.builds(
        lambda y, m, k: D(y, m, 1) + timedelta(days=k),
        st.integers(1990, 2100),
        st.integers(1, 12),
        st.integers(-3, 2),
    ),
)
spaces = st.sampled_from(["", "", " ", "  ", "\t"])


@st.composite
def messy_spellings(draw: st.DrawFn, rule: Rule) -> str:
    """`rule` written the way a person might: any case, spaces, repeats, any order."""
    match rule:
        case Daily():
            kind, items = "daily", None
        case Weekly(days=days):
            kind = "weekly"
            items = [draw(st.sampled_from([NAMES[d], FULL[d]])) for d in days]
        case Monthly(days=days, last=last):
            kind = "monthly"
            items = [draw(st.sampled_from([str(d), f"0{d}"])) for d in days]
            items += ["last"] if last else []
        case Every(n=n):
            kind, items = "every", [draw(st.sampled_from([str(n), f"00{n}"]))]
    text = draw(spaces) + kind
    if items is not None:
        if kind != "every":
            items = draw(st.permutations(items + draw(st.lists(st.sampled_from(items)))))
        separators = [draw(spaces) + "," + draw(spaces) for _ in items]
        listed = "".join(sep + item for sep, item in zip(separators, items, strict=True))
        text += draw(spaces) + ":" + draw(spaces) + listed.removeprefix(separators[0])
    text += draw(spaces)
    upper = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if u else c.lower() for c, u in zip(text, upper, strict=True))


# --- parsing: what people write ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule", "canonical"),
    [
        ("daily", Daily(), "daily"),
        ("  DAILY ", Daily(), "daily"),
        ("weekly:MON,THU", Weekly(frozenset({MON, THU})), "weekly:MON,THU"),
        ("weekly: thu, mon", Weekly(frozenset({MON, THU})), "weekly:MON,THU"),
        ("Weekly : Sun , sat,SAT", Weekly(frozenset({SAT, SUN})), "weekly:SAT,SUN"),
        ("weekly:monday,Friday", Weekly(frozenset({MON, FRI})), "weekly:MON,FRI"),
        ("monthly:15,1", Monthly(frozenset({1, 15})), "monthly:1,15"),
        ("monthly:last", Monthly(last=True), "monthly:last"),
        ("monthly: LAST , 15,1, 1", Monthly(frozenset({1, 15}), True), "monthly:1,15,last"),
        ("monthly:28", Monthly(frozenset({28})), "monthly:28"),
        ("every:3", Every(3), "every:3"),
        ("EVERY : 007", Every(7), "every:7"),
        ("every:1", Every(1), "every:1"),
        ("every:3650", Every(3650), "every:3650"),
    ],
)
def test_rules_people_write(text: str, rule: Rule, canonical: str) -> None:
    parsed = parse(text)
    assert parsed == rule
    assert str(parsed) == canonical
    assert parse(canonical) == parsed
    assert hash(parse(canonical)) == hash(parsed)


def test_rules_compare_by_value_and_kind() -> None:
    assert {parse("daily"), Daily(), parse(" daily ")} == {Daily()}
    assert Every(1) != Daily()
    assert Weekly(frozenset(range(7))) != Daily()
    assert Weekly([THU, MON]) == Weekly(frozenset({MON, THU}))  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        Every(3).n = 4  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", ["empty", "daily", "weekly:", "monthly:", "every:"]),
        ("   ", ["empty", "daily"]),
        ("yearly", ["unknown rule 'yearly'", "daily", "weekly:", "monthly:", "every:N"]),
        ("yearly:1", ["unknown rule 'yearly'"]),
        ("weekdays", ["weekly:MON,TUE,WED,THU,FRI"]),
        ("biweekly", ["every:14"]),
        ("daily:1", ["daily takes nothing"]),
        ("weekly", ["after a colon", "weekly:MON,THU"]),
        ("weekly:", ["after a colon", "weekly:MON,THU"]),
        ("weekly:  ", ["after a colon"]),
        ("monthly:", ["after a colon", "monthly:1,15", "monthly:last"]),
        ("every:", ["after a colon", "every:3"]),
        ("every", ["after a colon", "every:3"]),
        ("weekly:MOM", ["unknown weekday 'MOM'", "MON", "SUN"]),
        ("weekly:mon,tuesd", ["unknown weekday 'tuesd'"]),
        ("weekly:ſun", ["unknown weekday"]),  # upper() would make it SUN; not ASCII, not a day
        ("weekly:MON,", ["trailing comma"]),
        ("monthly:1,15,", ["trailing comma"]),
        ("monthly:,1", ["empty entry"]),
        ("weekly:MON,,THU", ["empty entry"]),
        ("weekly:MON THU", ["separate days with commas"]),
        ("monthly:0", ["day 0", "1 to 28", "last"]),
        ("monthly:32", ["32", "1 to 28", "last"]),
        ("monthly:99999999999999999999999", ["999999999999…", "1 to 28"]),
        ("monthly:first", ["'first' is not a day of the month", "1 to 28", "last"]),
        ("monthly:-1", ["'-1' is not a day of the month", "last"]),
        ("monthly:1.5", ["'1.5' is not a day of the month"]),
        ("every:0", ["every:0", "1 to 3650"]),
        ("every:3651", ["every:3651", "at most every:3650"]),
        ("every:99999999999999999999", ["too far apart", "3650"]),
        ("every:-1", ["'-1' is not a whole number of days", "1 to 3650"]),
        ("every:1.5", ["'1.5' is not a whole number of days"]),
        ("every:3 days", ["'3 days' is not a whole number of days"]),
        ("every:²", ["is not a whole number of days"]),
        ("every:x", ["'x' is not a whole number"]),
        ("x" * 201, ["too long", "201", "at most 200"]),
        ("weekly:MON" + " " * 191, ["too long"]),
        ("\x00", ["unknown rule '\\x00'"]),
        ("daily\nweekly:MON", ["unknown rule 'daily\\nweekly'"]),
    ],
)
def test_rejections_say_what_was_wrong_and_what_is_accepted(text: str, words: list[str]) -> None:
    with pytest.raises(RuleError) as caught:
        parse(text)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    "text", ["monthly:29", "monthly:30", "monthly:31", "monthly:1,31", "monthly:15,30,last"]
)
def test_days_29_to_31_are_refused_with_the_reason(text: str) -> None:
    day = max(int(part) for part in text.removeprefix("monthly:").split(",") if part.isdigit())
    with pytest.raises(RuleError) as caught:
        parse(text)
    message = str(caught.value)
    for word in [str(day), "not every month", "skipped", "RFC 5545", "1 to 28", "last"]:
        assert word in message


@pytest.mark.parametrize(
    ("cron", "equivalent"),
    [
        ("0 9 * * 1", "weekly:MON"),
        ("0 9 * * 1,4", "weekly:MON,THU"),
        ("0 9 * * 4,1", "weekly:MON,THU"),
        ("30 8 * * 1-5", "weekly:MON,TUE,WED,THU,FRI"),
        ("0 9 * * 0", "weekly:SUN"),
        ("0 9 * * 7", "weekly:SUN"),
        ("0 9 * * mon,thu", "weekly:MON,THU"),
        ("0 9 * * *", "daily"),
        ("* * * * *", "daily"),
        ("0 9 1 * *", "monthly:1"),
        ("0 9 1,15 * *", "monthly:1,15"),
        ("0 9 L * *", "monthly:last"),
        ("@weekly", "weekly:SUN"),
        ("@daily", "daily"),
        (" @monthly ", "monthly:1"),
    ],
)
def test_cron_is_refused_with_the_readable_equivalent(cron: str, equivalent: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse(cron)
    message = str(caught.value)
    assert "cron" in message
    assert message.endswith(f"write {equivalent}")
    assert parse(equivalent)  # the suggestion itself is a rule


@pytest.mark.parametrize(
    "cron",
    ["0 9 * 2 1", "0 9 1 * 1", "0 9 31 * *", "0 9 */2 * *", "0 9 * * 1#2", "@yearly", "@hourly"],
)
def test_cron_without_an_equivalent_lists_the_forms(cron: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse(cron)
    message = str(caught.value)
    assert "cron" in message
    for word in ["daily", "weekly:", "monthly:", "every:N"]:
        assert word in message


@pytest.mark.parametrize("value", [None, 3, 1.5, b"daily", ["daily"], Daily()])
def test_non_text_is_a_rule_error(value: object) -> None:
    with pytest.raises(RuleError, match="must be text"):
        parse(value)  # type: ignore[arg-type]


def test_rule_error_is_a_value_error_with_a_code() -> None:
    with pytest.raises(ValueError) as caught:
        parse("nope")
    assert isinstance(caught.value, RuleError)
    assert caught.value.code == "invalid_rule"


@pytest.mark.parametrize(
    "build",
    [
        lambda: Weekly(frozenset()),
        lambda: Weekly(frozenset({7})),
        lambda: Monthly(),
        lambda: Monthly(frozenset({0})),
        lambda: Monthly(frozenset({31})),
        lambda: Every(0),
        lambda: Every(3651),
        lambda: Every(True),
    ],
)
def test_constructors_refuse_what_parse_refuses(build: object) -> None:
    with pytest.raises(RuleError):
        build()  # type: ignore[operator]


# --- describe ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("daily", "every day"),
        ("weekly:FRI", "every Friday"),
        ("weekly:MON,THU", "every Monday and Thursday"),
        ("weekly:MON,WED,FRI", "every Monday, Wednesday and Friday"),
        ("weekly:MON,TUE,WED,THU,FRI", "every Monday, Tuesday, Wednesday, Thursday and Friday"),
        ("weekly:MON,TUE,WED,THU,FRI,SAT,SUN", "every day"),
        ("weekly:sun,sat,fri,thu,wed,tue,mon", "every day"),
        (
            "weekly:MON,TUE,WED,THU,FRI,SAT",
            "every Monday, Tuesday, Wednesday, Thursday, Friday and Saturday",
        ),
        ("monthly:15", "on the 15th of every month"),
        ("monthly:1,15", "on the 1st and 15th of every month"),
        ("monthly:1,15,last", "on the 1st, 15th and last day of every month"),
        ("monthly:last", "on the last day of every month"),
        (
            "monthly:1,2,3,4,11,12,13,21,22,23",
            "on the 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd and 23rd of every month",
        ),
        ("every:1", "every day"),
        ("every:3", "every 3 days"),
    ],
)
def test_describe_in_plain_english(text: str, english: str) -> None:
    assert parse(text).describe() == english


# --- dates: examples -----------------------------------------------------------------------

START = D(2000, 1, 1)


@pytest.mark.parametrize(
    ("text", "day", "start", "expected"),
    [
        ("daily", D(2026, 6, 15), START, D(2026, 6, 15)),
        ("daily", D(2026, 6, 15), D(2026, 7, 1), D(2026, 7, 1)),
        ("weekly:MON,THU", D(2026, 6, 15), START, D(2026, 6, 15)),  # a Monday
        ("weekly:MON,THU", D(2026, 6, 16), START, D(2026, 6, 18)),
        ("weekly:MON,THU", D(2026, 6, 19), START, D(2026, 6, 22)),
        ("weekly:MON,THU", D(2026, 6, 1), D(2026, 6, 16), D(2026, 6, 18)),
        ("weekly:SUN", D(2026, 12, 28), START, D(2027, 1, 3)),
        ("monthly:last", D(2026, 1, 1), START, D(2026, 1, 31)),
        ("monthly:last", D(2026, 2, 1), START, D(2026, 2, 28)),
        ("monthly:last", D(2028, 2, 1), START, D(2028, 2, 29)),
        ("monthly:last", D(2000, 2, 1), START, D(2000, 2, 29)),
        ("monthly:last", D(2100, 2, 1), START, D(2100, 2, 28)),
        ("monthly:last", D(2026, 4, 30), START, D(2026, 4, 30)),
        ("monthly:1,15,last", D(2026, 1, 16), START, D(2026, 1, 31)),
        ("monthly:1,15,last", D(2026, 2, 1), START, D(2026, 2, 1)),
        ("monthly:1", D(2026, 1, 2), START, D(2026, 2, 1)),
        ("monthly:28", D(2026, 12, 29), START, D(2027, 1, 28)),
        ("monthly:28,last", D(2026, 2, 28), START, D(2026, 2, 28)),
        ("every:3", D(2026, 6, 10), D(2026, 6, 15), D(2026, 6, 15)),
        ("every:3", D(2026, 6, 16), D(2026, 6, 15), D(2026, 6, 18)),
        ("every:3", D(2026, 6, 18), D(2026, 6, 15), D(2026, 6, 18)),
        ("every:14", D(2027, 1, 1), D(2026, 6, 15), D(2027, 1, 11)),
    ],
)
def test_next_on_or_after(text: str, day: date, start: date, expected: date) -> None:
    assert parse(text).next_on_or_after(day, start) == expected


@pytest.mark.parametrize(
    ("text", "day", "start", "expected"),
    [
        ("daily", D(2026, 6, 15), D(2026, 6, 15), D(2026, 6, 15)),
        ("daily", D(2026, 6, 14), D(2026, 6, 15), None),
        ("every:3", D(2026, 6, 17), D(2026, 6, 15), D(2026, 6, 15)),
        ("every:3", D(2026, 6, 14), D(2026, 6, 15), None),
        ("weekly:MON,THU", D(2026, 6, 17), START, D(2026, 6, 15)),
        ("weekly:THU", D(2026, 6, 17), D(2026, 6, 12), None),
        ("monthly:15", D(2026, 6, 10), D(2026, 6, 1), None),
        ("monthly:15", D(2026, 6, 10), START, D(2026, 5, 15)),
        ("monthly:last", D(2026, 3, 30), START, D(2026, 2, 28)),
        ("monthly:last", D(2026, 1, 15), START, D(2025, 12, 31)),
        ("monthly:1,last", D(2026, 3, 31), START, D(2026, 3, 31)),
        ("monthly:28", D(2026, 1, 27), START, D(2025, 12, 28)),
        ("monthly:15", D(2026, 7, 10), START, D(2026, 6, 15)),
        ("monthly:20", D(2026, 3, 1), START, D(2026, 2, 20)),
        ("monthly:20", D(2024, 3, 1), START, D(2024, 2, 20)),
    ],
)
def test_last_on_or_before(text: str, day: date, start: date, expected: date | None) -> None:
    assert parse(text).last_on_or_before(day, start) == expected


def test_occurrences() -> None:
    monday = D(2026, 6, 15)
    assert parse("weekly:MON,THU").occurrences(monday, monday, 4) == [
        D(2026, 6, 15),
        D(2026, 6, 18),
        D(2026, 6, 22),
        D(2026, 6, 25),
    ]
    assert parse("monthly:1,last").occurrences(START, D(2026, 1, 20), 3) == [
        D(2026, 1, 31),
        D(2026, 2, 1),
        D(2026, 2, 28),
    ]
    assert parse("every:10").occurrences(monday, D(2026, 6, 1), 2) == [monday, D(2026, 6, 25)]
    assert parse("daily").occurrences(monday, monday, 0) == []
    with pytest.raises(ValueError, match="negative"):
        parse("daily").occurrences(monday, monday, -1)


def test_next_after() -> None:
    assert parse("weekly:MON").next_after(D(2026, 6, 15), START) == D(2026, 6, 22)
    assert parse("every:2").next_after(D(2026, 6, 15), D(2026, 6, 15)) == D(2026, 6, 17)


def test_to_rrule_exact_text() -> None:
    monday = D(2026, 6, 15)
    assert parse("daily").to_rrule(monday) == "DTSTART;VALUE=DATE:20260615\nRRULE:FREQ=DAILY"
    assert parse("weekly:THU,MON").to_rrule(monday) == (
        "DTSTART;VALUE=DATE:20260615\nRRULE:FREQ=WEEKLY;BYDAY=MO,TH"
    )
    assert parse("monthly:last,15,1").rrule_value() == "FREQ=MONTHLY;BYMONTHDAY=1,15,-1"
    assert parse("every:3").rrule_value() == "FREQ=DAILY;INTERVAL=3"
    assert parse("daily").to_rrule(D(999, 1, 2)).startswith("DTSTART;VALUE=DATE:09990102\n")


# --- the edges of the calendar --------------------------------------------------------------


def test_answers_past_date_max_are_out_of_range() -> None:
    last = date.max  # 9999-12-31, a Friday
    assert parse("weekly:FRI").next_on_or_after(last, START) == last
    assert parse("monthly:last").next_on_or_after(D(9999, 12, 2), START) == last
    assert parse("every:3650").next_on_or_after(D(9999, 1, 1), D(9990, 1, 1)) == D(9999, 12, 30)
    for text, day in [
        ("weekly:MON", last),
        ("monthly:1", D(9999, 12, 2)),
        (
            "every:3650",
            D(9999, 12, 31),
        ),
    ]:
        with pytest.raises(RuleError, match="date out of range"):
            parse(text).next_on_or_after(day, D(9990, 1, 1))
    with pytest.raises(RuleError, match="date out of range"):
        parse("daily").next_after(last, START)
    assert parse("daily").occurrences(D(9999, 12, 30), D(9999, 12, 30), 5) == [
        D(9999, 12, 30),
        last,
    ]
    assert parse("monthly:1").occurrences(START, D(9999, 12, 1), 3) == [D(9999, 12, 1)]


def test_nothing_before_date_min() -> None:
    first = date.min  # 0001-01-01, a Monday
    assert parse("weekly:MON").last_on_or_before(first, first) == first
    assert parse("weekly:SUN").last_on_or_before(first, first) is None
    assert parse("monthly:5").last_on_or_before(D(1, 1, 3), first) is None
    assert parse("monthly:last").last_on_or_before(D(1, 1, 30), first) is None
    assert parse("every:5").last_on_or_before(first, first) == first


def test_imports_only_the_standard_library() -> None:
    """Besides the standard library, only the exception tree (itself stdlib-only): a
    RuleError is an InvalidInput."""
    code = (
        "import sys; before = set(sys.modules); import ondeck.core.rules; "
        "new = set(sys.modules) - before; "
        "print(sorted(m for m in new if m.split('.')[0] not in sys.stdlib_module_names))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        "['ondeck',",
        "'ondeck.core',",
        "'ondeck.core.errors',",
        "'ondeck.core.rules']",
    ]


# --- properties -----------------------------------------------------------------------------


@settings(QUICK, max_examples=300)
@given(rules, dates, dates)
def test_next_on_or_after_skips_no_occurrence(rule: Rule, day: date, start: date) -> None:
    found = rule.next_on_or_after(day, start)
    assert found >= day
    assert found >= start
    assert matches(rule, found, start)
    skipped = walk(max(day, start), found)[:-1]
    assert not any(matches(rule, d, start) for d in skipped)
    assert rule.next_after(day, start) == rule.next_on_or_after(day + timedelta(days=1), start)
    assert rule.last_on_or_before(found, start) == found


@settings(QUICK, max_examples=300)
@given(rules, dates, dates)
def test_last_on_or_before_skips_no_occurrence(rule: Rule, day: date, start: date) -> None:
    found = rule.last_on_or_before(day, start)
    if found is None:
        assert not any(matches(rule, d, start) for d in walk(start, day))
        assert day < rule.next_on_or_after(start, start)
        return
    assert start <= found <= day
    assert matches(rule, found, start)
    assert not any(matches(rule, d, start) for d in walk(found, day)[1:])
    assert rule.next_after(found, start) > day
    assert rule.next_on_or_after(found, start) == found


@settings(QUICK, max_examples=80)
@given(rules, dates, st.integers(0, 3 * 366))
def test_occurrences_are_every_matching_day_over_three_years(
    rule: Rule, start: date, offset: int
) -> None:
    end = start + timedelta(days=3 * 366)
    from_day = start + timedelta(days=offset)
    expected = [d for d in walk(from_day, end) if matches(rule, d, start)]
    found = rule.occurrences(start, from_day, len(expected) + 1)
    assert found[: len(expected)] == expected
    assert len(found) == len(expected) + 1
    assert found[-1] > end


@QUICK
@given(rules)
def test_canonical_form_round_trips(rule: Rule) -> None:
    text = str(rule)
    assert parse(text) == rule
    assert str(parse(text)) == text
    assert " " not in text
    assert rule.describe()


@QUICK
@given(st.data(), rules)
def test_messy_spellings_mean_the_same_rule(data: st.DataObject, rule: Rule) -> None:
    text = data.draw(messy_spellings(rule))
    if len(text) <= 200:
        assert parse(text) == rule
        assert str(parse(text)) == str(rule)


near_misses = st.builds(
    lambda prefix, rest: prefix + rest,
    st.sampled_from(
        ["", "daily", "weekly", "weekly:", "monthly:", "every:", "every:1", "monthly:1,", "@"]
    ),
    st.text(
        st.one_of(
            st.sampled_from(list("0123456789,:; -+.*/#?LlastMONmonTHUsun\t\n")),
            st.characters(),
        ),
        max_size=30,
    ),
)
cron_like = st.from_regex(
    r"[0-9*,/-]{1,4} [0-9*,/-]{1,4} [0-9A-Z*,/?#L-]{1,5} [0-9*,/-]{1,3} [0-9A-Za-z*,/?#-]{1,7}",
    fullmatch=True,
)


@settings(QUICK, max_examples=400)
@given(st.one_of(st.text(max_size=250), near_misses, cron_like))
def test_any_text_parses_or_raises_a_one_line_rule_error(text: str) -> None:
    try:
        rule = parse(text)
    except RuleError as error:
        message = str(error)
        assert message
        assert len(message.splitlines()) == 1
        return
    assert isinstance(rule, Rule)
    assert parse(str(rule)) == rule


@settings(QUICK, max_examples=60)
@given(rules, dates)
def test_rrule_yields_the_same_dates_in_dateutil(rule: Rule, start: date) -> None:
    end = start + timedelta(days=2 * 366)
    recurrence = rrulestr(rule.to_rrule(start))
    theirs = [
        d.date()
        for d in recurrence.between(
            datetime.combine(start, time()), datetime.combine(end, time()), inc=True
        )
    ]
    ours = [d for d in rule.occurrences(start, start, 2 * 366 + 1) if d <= end]
    assert theirs == ours


def test_a_rule_is_read_one_way() -> None:
    """`parse` is the only parser, and its RuleError already is the InvalidInput
    (code invalid_rule) every entry point shows, so no module converts it or parses again."""
    import re
    from pathlib import Path

    import ondeck
    from ondeck.core.errors import InvalidInput
    from ondeck.work import schedules

    root = Path(ondeck.__file__).parent
    converting = re.compile(r"except[^\n:]*RuleError[^\n:]*:\s*\n\s*raise\b")
    parsing = re.compile(r"def parse_rule\b|\b_parse\(|InvalidInput\(str\(exc\), code=")
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path != root / "core" / "rules.py"
        and (converting.search(path.read_text()) or parsing.search(path.read_text()))
    ]
    assert offenders == []
    assert schedules.parse_rule is parse
    assert issubclass(RuleError, InvalidInput) and RuleError.code == "invalid_rule"
    assert parse(" Weekly: thu, mon ") is parse(" Weekly: thu, mon "), "cached"
