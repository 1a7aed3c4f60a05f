"""The window of wrong tokens per address (core/throttle.py): refuses after the limit,
slides, and remembers a bounded number of addresses."""

from __future__ import annotations

from ondeck.core.throttle import FailureWindow


def test_it_refuses_after_ten_failures_until_the_first_is_a_minute_old() -> None:
    window = FailureWindow()
    starts = [window.fail("a", float(t)) for t in range(10)]
    assert starts == [False] * 9 + [True]
    assert window.retry_after("a", 10.0) == 50
    assert window.retry_after("b", 10.0) is None
    assert window.retry_after("a", 59.5) == 1
    assert window.retry_after("a", 60.0) is None  # the first failure left the window


def test_failures_spread_over_more_than_a_minute_are_never_refused() -> None:
    window = FailureWindow()
    for t in range(100):
        assert not window.fail("a", t * 7.0)
        assert window.retry_after("a", t * 7.0) is None


def test_it_remembers_a_bounded_number_of_addresses() -> None:
    window = FailureWindow(max_addresses=3)
    for i in range(10):
        window.fail(f"10.0.0.{i}", 0.0)
    assert len(window._failures) <= 3
    for _ in range(10):
        window.fail("attacker", 1.0)
    window.fail("newcomer", 2.0)  # room is made by forgetting the oldest, not the attacker
    assert window.retry_after("attacker", 2.0) == 59


def test_counting_says_whether_any_failure_is_within_the_window() -> None:
    """The guard asks this first: while nobody gave a wrong token it does not look up who
    asks (a read of /proc/net/tcp for a caller on this machine)."""
    window = FailureWindow(limit=3, window=60.0)
    assert not window.counting(1000.0)
    window.fail("127.0.0.1 (uid 65534)", 1000.0)
    assert window.counting(1030.0)
    assert not window.counting(1061.0), "a failure past the window is forgotten"
    assert window.retry_after("127.0.0.1 (uid 65534)", 1061.0) is None
