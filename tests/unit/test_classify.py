"""Sides and projects: decided by the first rank that speaks, every disagreement kept, and
unclassified rather than guessed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ondeck.sessions.classify import (
    Facts,
    Marker,
    Rules,
    classify,
    read_marker,
    remote_forms,
    strip_credentials,
)

SIDES = {"work": ["/home/me/work"], "personal": ["/home/me/own", "~/notes"]}


def test_no_sides_is_one_pool_and_nothing_is_unclassified() -> None:
    c = classify(Facts(cwd="/anywhere"), Rules())
    assert (c.side.value, c.project.value, c.unclassified) == (None, None, False)
    c = classify(Facts(cwd="/x", marker=Marker(path="/x/.ondeck.toml", side="personal")), Rules())
    assert c.side.value is None and not c.unclassified


def test_sides_configured_and_none_applies_is_unclassified() -> None:
    c = classify(Facts(cwd="/tmp/elsewhere", git_root="/tmp/elsewhere"), Rules(sides=SIDES))
    assert c.unclassified and c.side.value is None and c.project.value is None
    assert "no rule gives a side" in c.reason


def test_a_marker_cannot_move_a_session_to_another_side_it_is_unclassified_naming_both() -> None:
    """The owner's path prefix outranks the marker, and the session is held for a look."""
    marker = Marker(path="/home/me/work/blog/.ondeck.toml", side="personal", project="blog")
    c = classify(Facts(cwd="/home/me/work/blog", marker=marker), Rules(sides=SIDES))
    assert c.unclassified and c.side.value is None and c.project.value is None
    assert "the marker /home/me/work/blog/.ondeck.toml names side personal" in c.reason
    assert "the owner's settings give side work by the path prefix /home/me/work" in c.reason
    [d] = c.disagreements
    assert (d.field, d.decided.value, d.same_rank) == ("side", "work", False)
    assert [(s.rule, s.value) for s in d.signals] == [("marker", "personal")]


def test_a_marker_naming_the_owners_side_agrees_and_may_name_the_project() -> None:
    marker = Marker(path="/home/me/work/blog/.ondeck.toml", side="work", project="blog")
    c = classify(Facts(cwd="/home/me/work/blog", marker=marker), Rules(sides=SIDES))
    assert not c.unclassified and not c.disagreements
    assert (c.side.value, c.side.rule, c.project.value, c.project.rule) == (
        "work",
        "path",
        "blog",
        "marker",
    )


def test_a_marker_side_where_no_owners_rule_speaks_decides_nothing() -> None:
    marker = Marker(path="/tmp/clone/.ondeck.toml", side="work")
    c = classify(Facts(cwd="/tmp/clone", marker=marker), Rules(sides=SIDES))
    assert c.unclassified and c.side.value is None
    assert "names side work, but no rule of the owner's settings gives a side" in c.reason


def test_a_marker_can_only_make_capture_stricter() -> None:
    rules = Rules(sides=SIDES, no_capture=["/home/me/own/diary"])
    loose = Marker(path="/home/me/own/diary/.ondeck.toml", capture=True)
    c = classify(Facts(cwd="/home/me/own/diary", marker=loose), rules)
    assert c.capture.value is False and c.capture.rule == "path"
    strict = Marker(path="/home/me/work/x/.ondeck.toml", capture=False)
    c = classify(Facts(cwd="/home/me/work/x", marker=strict), rules)
    assert c.capture.value is False and c.capture.rule == "marker"


def test_a_directory_reached_through_a_symlink_is_classified_where_it_really_is(
    tmp_path: Path,
) -> None:
    from ondeck.host.quick_settings import HookConfig
    from ondeck.sessions.capture.events import observe

    work, own = tmp_path / "work", tmp_path / "own"
    (own / "일기").mkdir(parents=True)
    work.mkdir()
    (work / "looks-like-work").symlink_to(own / "일기")
    config = HookConfig.from_rules({"sides": {"work": [str(work)], "personal": [str(own)]}})
    facts, c = observe(str(work / "looks-like-work"), config)
    assert (c.side.value, c.side.source) == ("personal", str(own))
    assert facts["cwd"] == str(work / "looks-like-work")
    assert c.to_json()["real_cwd"] == str(own / "일기")
    assert "real_cwd" not in c.to_json(private=True)
    # A prefix that is itself a link is taken where it points.
    (tmp_path / "w").symlink_to(work)
    linked = HookConfig.from_rules({"sides": {"work": [str(tmp_path / "w")]}})
    plain = work / "site"
    plain.mkdir()
    assert observe(str(plain), linked)[1].side.value == "work"


def test_the_most_specific_prefix_decides() -> None:
    rules = Rules(sides={"work": ["/srv"], "personal": ["/srv/mine"]})
    c = classify(Facts(cwd="/srv/mine/x"), rules)
    assert (c.side.value, c.side.source) == ("personal", "/srv/mine")
    assert classify(Facts(cwd="/srv/minefield"), rules).side.value == "work", "not a prefix"


def test_the_same_rank_disagreeing_is_unclassified() -> None:
    rules = Rules(sides={"work": ["/srv/x"], "personal": ["/srv/x/"]})
    c = classify(Facts(cwd="/srv/x/y"), rules)
    assert c.unclassified and "path rules disagree on the side" in c.reason
    [d] = c.disagreements
    assert d.same_rank and {s.value for s in d.signals} == {"work", "personal"}


def test_remote_patterns_decide_below_paths_and_above_the_git_name() -> None:
    rules = Rules(
        sides=SIDES,
        remotes={"github.com/acme/*": {"side": "work", "project": "acme"}},
    )
    facts = Facts(
        cwd="/tmp/clone",
        git_root="/tmp/clone",
        remotes={"origin": "git@github.com:acme/site.git"},
    )
    c = classify(facts, rules)
    assert (c.side.value, c.side.rule, c.project.value, c.project.rule) == (
        "work",
        "remote",
        "acme",
        "remote",
    )
    assert c.disagreements == (), "the git top-level's name is a fallback, not a rule"


def test_two_remotes_naming_two_sides_is_unclassified() -> None:
    rules = Rules(
        sides=SIDES,
        remotes={"github.com/acme/*": {"side": "work"}, "github.com/me/*": {"side": "personal"}},
    )
    remotes = {"origin": "https://github.com/me/site", "upstream": "https://github.com/acme/site"}
    c = classify(Facts(cwd="/tmp/x", remotes=remotes), rules)
    assert c.unclassified and "remote rules disagree" in c.reason


def test_the_git_top_level_name_is_the_project_only_where_no_rule_speaks() -> None:
    rules = Rules(sides=SIDES, projects={"/home/me/work/site": "website"})
    c = classify(Facts(cwd="/home/me/work/site/src", git_root="/home/me/work/site"), rules)
    assert (c.project.value, c.project.rule) == ("website", "path")
    c = classify(Facts(cwd="/home/me/work/다른 repo", git_root="/home/me/work/다른 repo"), rules)
    assert (c.side.value, c.project.value, c.project.rule) == ("work", "repo", "git")
    c = classify(Facts(cwd="/home/me/work/plain"), rules)
    assert c.project.value is None, "never the folder name alone"


def test_an_unknown_side_or_a_broken_marker_is_unclassified_when_sides_exist() -> None:
    marker = Marker(path="/home/me/work/x/.ondeck.toml", side="hobby")
    c = classify(Facts(cwd="/home/me/work/x", marker=marker), Rules(sides=SIDES))
    assert c.unclassified and "names side 'hobby', which is not configured" in c.reason
    broken = Marker(path="/home/me/work/x/.ondeck.toml", problem="not valid TOML (x)")
    c = classify(Facts(cwd="/home/me/work/x", marker=broken), Rules(sides=SIDES))
    assert c.unclassified and "not valid TOML" in c.reason
    c = classify(Facts(cwd="/home/me/work/x", marker=broken), Rules())
    assert not c.unclassified and "not valid TOML" in c.reason, "shown, with no sides"


def test_capture_off_by_marker_or_by_config_and_privacy_wins() -> None:
    on = Marker(path="/p/.ondeck.toml", capture=True)
    c = classify(Facts(cwd="/p/secret/x", marker=on), Rules(no_capture=["/p/secret"]))
    assert (c.capture.value, c.capture.rule, c.capture.source) == (False, "path", "/p/secret")
    off = Marker(path="/p/.ondeck.toml", capture=False)
    c = classify(Facts(cwd="/p", marker=off), Rules())
    assert (c.capture.value, c.capture.rule) == (False, "marker")
    private = c.to_json(private=True)
    assert private["capture"]["source"] is None and "/p" not in str(private)


def test_read_marker_finds_the_nearest_and_says_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".ondeck.toml").write_text('side = "work"\n')
    (tmp_path / "a" / ".ondeck.toml").write_text('project = "상품"\n')
    m = read_marker(str(tmp_path / "a" / "b"))
    assert m is not None and m.path == str(tmp_path / "a" / ".ondeck.toml")
    assert m.problem == "project '상품' is not a project name"
    (tmp_path / "a" / ".ondeck.toml").write_text('project = "shop"\ncapture = false\n')
    m = read_marker(str(tmp_path / "a" / "b"))
    assert (m.project, m.side, m.capture, m.problem) == ("shop", None, False, None)
    (tmp_path / "a" / ".ondeck.toml").write_text("capture = 'no'\n")
    assert read_marker(str(tmp_path / "a")).problem == "capture must be true or false"
    (tmp_path / "a" / ".ondeck.toml").write_bytes(b"side = \xff\n")
    assert "not valid TOML" in (read_marker(str(tmp_path / "a")).problem or "")
    assert read_marker(None) is None
    assert read_marker(str(tmp_path / "missing" / "dir")).side == "work", "parents still count"


@pytest.mark.parametrize(
    ("url", "forms"),
    [
        ("git@github.com:acme/site.git", ("git@github.com:acme/site.git", "github.com/acme/site")),
        (
            "https://github.com/acme/site.git",
            ("https://github.com/acme/site.git", "github.com/acme/site"),
        ),
        (
            "https://tok:x-oauth@github.com/acme/site",
            ("https://github.com/acme/site", "github.com/acme/site"),
        ),
        (
            "ssh://git@host.example:2222/team/repo/",
            ("ssh://host.example:2222/team/repo/", "host.example/team/repo"),
        ),
        ("/srv/git/repo.git", ("/srv/git/repo.git", "/srv/git/repo")),
    ],
)
def test_remote_urls_are_matched_as_configured_and_as_host_path(
    url: str, forms: tuple[str, ...]
) -> None:
    assert remote_forms(url) == forms


def test_credentials_never_leave_the_machine() -> None:
    assert strip_credentials("https://user:s3cret@example.org/x") == "https://example.org/x"
    assert strip_credentials("git@github.com:acme/x") == "git@github.com:acme/x"
