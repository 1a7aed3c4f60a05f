"""The dashboard's font stack covers Korean on every system: macOS's, Windows's and the
Noto fonts of Linux and Android come before the generic family, so a browser picks a font
with Hangul in it rather than whatever its default sans-serif falls back to."""

from __future__ import annotations

import re
from pathlib import Path

CSS = (
    Path(__file__).resolve().parents[2] / "src" / "ondeck" / "entrypoints" / "web" / "static"
) / "ondeck.css"
KOREAN = ["Apple SD Gothic Neo", "Malgun Gothic", "Noto Sans KR"]


def _body_fonts() -> list[str]:
    [rule] = re.findall(r"^body \{([^}]*)\}", CSS.read_text(encoding="utf-8"), re.M)
    [font] = re.findall(r"font:\s*[\d.]+px/[\d.]+\s+([^;]+);", rule)
    return [name.strip().strip('"') for name in font.split(",")]


def test_the_body_fonts_name_a_korean_font_of_each_system_before_the_generic_one() -> None:
    fonts = _body_fonts()
    assert fonts[-1] == "sans-serif", fonts
    for name in KOREAN:
        assert name in fonts, f"{name} missing from {fonts}"
    # Latin text keeps the system's own face: the Korean fonts come after it.
    assert fonts.index("system-ui") < min(fonts.index(name) for name in KOREAN)
