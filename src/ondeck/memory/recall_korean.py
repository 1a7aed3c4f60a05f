"""Korean words as recall indexes them: a word without its particles and endings, cut into
two-syllable pieces.

Korean glues particles (배포는, 비밀번호를) and endings (배포했다, 배포하지) to the word,
and writes compounds without spaces (자동배포, 데이터베이스백업). So a word loses its
longest known particle or ending (never below two syllables: 회의 stays 회의, not 회 + 의),
and what is left is indexed as its two-syllable pieces (비밀번호 → 비밀, 밀번, 번호): a
query's word matches the same word in any form, inside a compound too, and a form the list
does not know still shares most of its pieces. Chosen over a morphological analyser
(kiwipiepy: 100 MB of model, seconds to load) because bench/recall_quality.py meets its
goal with it (docs/benchmarks.md): it stays small and loads in no time.
"""

from __future__ import annotations

# Particles after a noun (and their combinations); single syllables that often end a plain
# noun (나, 라, 다, 며, 든) are left out: 바나나 must stay one word.
_PARTICLES = (
    "은 는 이 가 을 를 의 에 도 로 와 과 만 랑 께 들 "
    "에서 에게 한테 께서 으로 까지 부터 처럼 보다 마다 이나 이랑 하고 이며 이든 이란 이라 "
    "에서는 에서도 에게는 에게서 으로는 으로도 으로서 으로써 로서 로써 로는 로도 에는 에도 "
    "까지는 까지도 부터는 와는 과는 이라는 이라고 라고 라는 이라도 라도 이다 입니다 이에요 "
    "예요 이었다 였다 이고 들은 들이 들을 들의 들에 들도 들과 들로 들에서 만은 만을 조차 밖에"
)

# Endings after a noun that takes 하다 or 되다 (배포하다, 배포되다): the verb's forms.
_LIGHT_VERB_ENDINGS = (
    "하다 한다 했다 하지 하고 하는 하면 해서 해야 하기 할 한 해 했 함 합니다 했습니다 "
    "하세요 하자 하려면 하려고 하게 하지만 했고 했는데 하는데 했으니 하니까 하여 하였다 "
    "했었다 하기로 하기전 하기에 하며 하던 했던 할때 할지 했을 했음 하겠다 하겠습니다 "
    "해요 했어요 해라 해도 하거나 하든 "
    "되다 된다 됐다 되었다 되는 된 될 되지 돼 되고 되면 되어 되기 됨 되어야 돼야 됩니다 "
    "되었습니다 됐습니다 되던 됐던 되며 되게 되도록 돼서 되어서 "
    "시킨다 시켰다 시키는 시킨 시킬 시켜"
)

_ENDINGS = tuple(
    sorted(set(_PARTICLES.split()) | set(_LIGHT_VERB_ENDINGS.split()), key=len, reverse=True)
)

_ENDING_SET = frozenset(_ENDINGS)
_LONGEST = max(map(len, _ENDINGS))


def is_ending(word: str) -> bool:
    """Whether `word` is a particle or ending by itself (`TTL은`: the 은 after a Latin word)."""
    return word in _ENDING_SET


# Words that say nothing of what is looked for: question words and fillers.
STOP = frozenset(
    [
        "언제",
        "어떻게",
        "왜",
        "무엇",
        "뭐",
        "뭘",
        "어디",
        "누가",
        "누구",
        "무슨",
        "어떤",
        "어느",
        "얼마나",
        "그리고",
        "그러나",
        "하지만",
        "그래서",
        "또는",
        "및",
        "등",
        "것",
        "수",
        "때",
        "이",
        "그",
        "저",
        "거",
        "좀",
        "잘",
        "더",
        "또",
        "다",
        "있다",
        "없다",
        "있는",
        "없는",
        "있음",
        "없음",
        "해야",
        "하는",
        "한다",
        "했다",
        "않는다",
        "않다",
        "않는",
        "않고",
        "않았다",
        "않음",
        "안",
        "못",
        "합니다",
        "됩니다",
        "된다",
        "했습니다",
    ]
)


# Hangul's composed syllables (가 to 힣): what is read as Korean.
SYLLABLES = ("\uac00", "\ud7a3")


def is_hangul(ch: str) -> bool:
    return SYLLABLES[0] <= ch <= SYLLABLES[1]


def stem(word: str) -> str:
    """`word` (Hangul syllables) without its longest known particle or ending, when at
    least two syllables are left."""
    for length in range(min(_LONGEST, len(word) - 2), 0, -1):
        if word[-length:] in _ENDING_SET:
            return word[:-length]
    return word


def pieces(word: str) -> list[str]:
    """The index terms of a Korean word: its stem's two-syllable pieces (a one-syllable
    word is itself); none for a word that says nothing."""
    if word in STOP:
        return []
    root = stem(word)
    if root in STOP:
        return []
    if len(root) < 3:
        return [root]
    return [root[i : i + 2] for i in range(len(root) - 1)]
