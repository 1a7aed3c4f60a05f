"""Words as recall indexes and asks them: one function turns a text into its index terms, the
same for what is stored and what is asked, so both stores hold and find the same terms.

- A word is a run of letters and digits (`_` and signs split it: `test_lease_holder_dies`
  is test, lease, holder, dies; Korean and Latin letters side by side split too:
  `Redis캐시` is Redis, 캐시), case folded by Python (`Ärger` and `ärger` are one word on
  both stores, whatever the database's own folding does).
- English words are stemmed by Snowball's English stemmer (deploy, deploying, deployed,
  deployment → deploy); words of no meaning (the, how, we) are not indexed.
- Korean words lose their particles and endings and are cut into two-syllable pieces
  (memory/recall_korean.py).
- Anything else (digits, words of other scripts, `v2`) is kept as it is, folded.

Kept out of the hook's path: the stemmer is imported when recall or the index needs it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache

from ondeck.memory import recall_korean

# The longest term kept: a longer run (a hash, base64) is cut; both sides cut it alike.
TERM_MAX = 64

_RUN = re.compile(r"[^\W_]+")
_SYLLABLE = "{}-{}".format(*recall_korean.SYLLABLES)
_HANGUL_OR_NOT = re.compile(f"[{_SYLLABLE}]+|[^{_SYLLABLE}]+")
_HANGUL = re.compile(f"[{_SYLLABLE}]")
_ENGLISH = re.compile(r"[a-z]+")

# Snowball's English stop words (its `english.stop` list), which say nothing of a topic.
_ENGLISH_STOP = frozenset(
    [
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "it",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "would",
        "should",
        "could",
        "ought",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "now",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "isn",
        "aren",
        "wasn",
        "weren",
        "hasn",
        "haven",
        "hadn",
        "doesn",
        "didn",
        "won",
        "wouldn",
        "shan",
        "shouldn",
        "cannot",
        "mustn",
        "let",
    ]
)


@lru_cache(maxsize=1)
def _stemmer() -> object:
    import snowballstemmer  # type: ignore[import-untyped]

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def _english(word: str) -> str:
    return str(_stemmer().stemWord(word))  # type: ignore[attr-defined]


def runs(text: str) -> Iterator[str]:
    """The words of `text` as written (not folded): letters and digits, Korean apart."""
    for run in _RUN.findall(text):
        if _HANGUL.search(run):
            latin = False
            for part in _HANGUL_OR_NOT.findall(run):
                korean = recall_korean.is_hangul(part[0])
                # A particle glued to a Latin word (`TTL은`, `DB를`) is not a word.
                if not (korean and latin and recall_korean.is_ending(part)):
                    yield part
                latin = not korean
        else:
            yield run


@lru_cache(maxsize=65_536)
def _word_terms(word: str) -> tuple[str, ...]:
    return tuple(_terms_of(word))


def word_terms(word: str) -> tuple[str, ...]:
    """The index terms of one word as `runs` gives it (none for a word of no meaning)."""
    return _word_terms(word)


def _terms_of(word: str) -> list[str]:
    folded = word.casefold()
    if recall_korean.is_hangul(folded[0]):
        return [t[:TERM_MAX] for t in recall_korean.pieces(folded)]
    if _ENGLISH.fullmatch(folded):
        if folded in _ENGLISH_STOP:
            return []
        return [_english(folded)[:TERM_MAX]]
    return [folded[:TERM_MAX]]


def terms(text: str) -> list[str]:
    """Every index term of `text`, in order, repeated as often as it occurs."""
    out: list[str] = []
    for word in runs(text):
        out += word_terms(word)
    return out


def counted(text: str) -> Counter[str]:
    """How often each term occurs in `text`: what the index keeps of it."""
    return Counter(terms(text))


def forms(text: str, wanted: set[str], most: int = 5) -> tuple[str, ...]:
    """The words of `text` as written that give any of the terms `wanted` (each once)."""
    found: list[str] = []
    for word in runs(text):
        if word not in found and wanted.intersection(word_terms(word)):
            found.append(word)
            if len(found) == most:
                break
    return tuple(found)
