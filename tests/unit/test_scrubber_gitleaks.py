"""gitleaks' rule set as the scrubber runs it (core/scrubber_gitleaks.py): every shipped rule
compiles in Python's `re` after translation, the small TOML reader reads the file as
`tomllib` does, the rules are judged as gitleaks judges them, and no rule costs more than
linear time on hostile text."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from ondeck.core import scrubber_gitleaks as gitleaks
from ondeck.core.scrubber import scrub

RULES_FILE = Path(gitleaks.RULES_FILE)
BLOCKS = RULES_FILE.read_text(encoding="utf-8").split("\n[[rules]]\n")


def _published() -> list[dict[str, object]]:
    with RULES_FILE.open("rb") as file:
        rules: list[dict[str, object]] = tomllib.load(file)["rules"]
    return rules


def test_the_file_says_where_it_came_from_and_its_licence_ships_beside_it() -> None:
    head = RULES_FILE.read_text(encoding="utf-8")[:800]
    assert "github.com/gitleaks/gitleaks" in head
    assert re.search(r"commit\s+#?\s*[0-9a-f]{40}", head)
    assert "MIT" in head
    licence = RULES_FILE.with_name("gitleaks.LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "Zachary Rice" in licence


def test_every_shipped_rule_and_allowlist_regex_compiles() -> None:
    rules = _published()
    assert len(rules) > 200
    regexes = [str(rule["regex"]) for rule in rules if "regex" in rule]
    for rule in rules:
        for allowlist in rule.get("allowlists", ()):  # type: ignore[attr-defined]
            regexes += allowlist.get("regexes", ())
    assert len(regexes) > 220
    for source in regexes:
        gitleaks.compile_rule(source)  # raises on what `re` does not take


def test_every_rule_that_runs_on_text_is_loaded_with_its_keywords() -> None:
    published = {str(rule["id"]): rule for rule in _published()}
    loaded = {rule.id: rule for rule in gitleaks.rules()}
    left_out = {i for i, r in published.items() if "path" in r} | set(gitleaks.SKIPPED)
    assert set(loaded) == set(published) - left_out
    assert len(loaded) >= 210
    for rule_id, rule in loaded.items():
        assert rule.keywords == tuple(published[rule_id]["keywords"]), rule_id  # type: ignore[arg-type]
        assert rule.compiled().regex.pattern  # every loaded rule compiles
    assert len(set(gitleaks.kinds())) == len(loaded)
    assert all(re.fullmatch(r"[a-z0-9_]+", kind) for kind in gitleaks.kinds())


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_the_reader_reads_each_block_as_tomllib_does(index: int) -> None:
    text = BLOCKS[index] if index == 0 else "[[rules]]\n" + BLOCKS[index]
    assert gitleaks.read_toml(text) == tomllib.loads(text)


def test_the_plain_fields_read_by_string_methods_are_tomllibs_where_read() -> None:
    read = 0
    for block in BLOCKS[1:]:
        fields = gitleaks.plain_fields(block)
        if fields is None:
            continue
        read += 1
        published = tomllib.loads("[[rules]]\n" + block)["rules"][0]
        for key in ("regex", "entropy", "secretGroup"):
            assert fields.get(key) == published.get(key), (key, block[:60])
    assert read > 200  # the few with allowlists or a path go through the reader
    assert gitleaks.plain_fields('id = "x"\nregex = "a"\n') is None  # not a literal


def test_the_reader_refuses_what_it_does_not_take() -> None:
    with pytest.raises(gitleaks.TomlError):
        gitleaks.read_toml("when = 1979-05-27T07:32:00Z\n")
    with pytest.raises(gitleaks.TomlError):
        gitleaks.read_toml("inline = { a = 1 }\n")


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(SG\.(?i)[a-z0-9]{4})", r"\b(SG\.(?i:[a-z0-9]{4}))"),
        (r"lin_api_(?i)[a-z0-9]{4}", r"lin_api_(?i:[a-z0-9]{4})"),
        (r"(?:a|b)\z", r"(?:a|b)\Z"),
        (r"[[:x]", r"[\[:x]"),
        (r"[]a]", r"[]a]"),
        (r"(?i)abc", r"(?i:abc)"),
        (r"a(?-i:B)c", r"a(?-i:B)c"),
    ],
)
def test_go_regexes_are_translated(go: str, python: str) -> None:
    assert gitleaks.translate(go) == python


def test_mid_pattern_flags_hold_to_the_end_of_their_group_only() -> None:
    regex = gitleaks.compile_rule(r"(x(?i)ab)c")
    assert regex.fullmatch("xABc") and not regex.fullmatch("xABC")


def test_word_boundaries_are_ascii_as_in_re2() -> None:
    """`토큰` then a token: RE2's `\\b` sees a boundary there; Python's Unicode one would not."""
    token = "dop" + "_v1_" + "0123456789abcdef" * 4
    assert scrub(f"토큰{token}").text == "토큰[redacted:digitalocean_pat]"


def test_the_secret_is_the_first_group_that_took_part_and_entropy_is_gitleaks_own() -> None:
    assert gitleaks.entropy("") == 0.0
    assert gitleaks.entropy("aaaa") == 0.0
    assert gitleaks.entropy("abcd") == 2.0
    # sendgrid-api-token keeps what follows the secret (its terminator is outside the group).
    token = "SG." + "aB3dE5gH7jK9mN1pQ3sT5v" + "." + "wX7yZ9bC1dF3hJ5kL7mN9pQ1rS3tU5vW7xY9zA1bC3d"
    assert scrub(f"key: {token};").text == "key: [redacted:sendgrid_api_token];"
    # Too little entropy: a run of one character is no key (twilio-api-key's bound is 3).
    assert scrub("SK" + "0" * 32).redactions == 0


def test_allowlists_are_applied() -> None:
    """aws-access-token's allowlist (`.+EXAMPLE$`) and the global stop words."""
    rule = next(r for r in gitleaks.rules() if r.id == "aws-access-token")
    assert list(rule.spans("id AKIA" + "IOSFODNN7EXAMPLE")) == []
    assert list(rule.spans("id AKIA" + "IOSFODNN7EXAMPLF")) != []


def test_reading_the_rules_needs_no_tomllib_and_no_typing() -> None:
    """The hooks keep `typing` out (tests/cli/test_hook_client.py); `tomllib` imports it."""
    code = (
        "import sys\n"
        "from ondeck.core.scrubber import scrub\n"
        "t = 'SG.' + 'aB3dE5gH7jK9mN1pQ3sT5v.' + 'wX7yZ9bC1dF3hJ5kL7mN9pQ1rS3tU5vW7xY9zA1bC3d'\n"
        "assert scrub('export KEY=' + t).redactions == 1\n"
        "print(sorted({'tomllib', 'typing'} & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


# --- linear time on hostile text --------------------------------------------------------------

FILLERS = (" ", "a", "0", "=")


@pytest.mark.timeout(600)
def test_no_rule_backtracks_out_of_proportion_on_its_own_keywords() -> None:
    """Each rule on 20,000 characters of its keyword and a filler, over and over: what a
    doubled `[\\w.-]{0,50}?` or a `.*?` to the line's end costs in a backtracking engine (16 s
    and 3.6 s here) shows; a linear rule takes well under a second even on a busy machine."""
    slow = []
    for rule in gitleaks.rules():
        for keyword in rule.keywords[:2]:
            for filler in FILLERS:
                unit = keyword + filler
                text = (unit * (20_000 // len(unit) + 1))[:20_000]
                # CPU time, not the wall's: other processes on a shared machine stretch
                # the wall (1.78 s seen for a linear rule at load 5), not this.
                start = time.process_time()
                list(rule.spans(text))
                took = time.process_time() - start
                if took > 1.5:
                    slow.append((rule.id, unit, round(took, 2)))
    assert not slow, slow
