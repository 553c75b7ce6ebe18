"""think_format against blocks made only of invisible characters (issue 26, Format).

A policy under RL pressure learns that the format reward checks "non-empty after strip()": a think block
or an answer of zero-width spaces, a BOM, word joiners, other Unicode format (Cf) characters, combining
marks with nothing to combine with, Unicode spaces or blank "letters" (Hangul fillers, the blank braille
pattern) shows nothing to a reader and must not be well formed. One visible character anywhere in the
block (a letter, a digit, a punctuation mark or a symbol, in any script) is enough.

No timings: the linear-time property is checked on 10 MB inputs in tests/verifiers/kinds/test_format_hostile.py style
(the scan must complete; a quadratic one would not finish)."""

from __future__ import annotations

import pytest

from verifiers.kinds.format import has_visible, think_format

INVISIBLE = {
    "zwsp": "\u200b",
    "bom": "\ufeff",
    "word-joiner": "\u2060",
    "zwnj": "\u200c",
    "zwj": "\u200d",
    "lrm-rlm": "\u200e\u200f",
    "bidi-isolates": "\u2066\u2069",
    "invisible-times": "\u2062",
    "soft-hyphen": "\u00ad",
    "mongolian-vowel-sep": "\u180e",
    "tag-chars": "\U000e0001\U000e0041",
    "combining-acute": "\u0301",
    "combining-grapheme-joiner": "\u034f",
    "variation-selector": "\ufe0f",
    "enclosing-circle": "\u20dd",
    "nbsp": "\u00a0",
    "ideographic-space": "\u3000",
    "em-space": "\u2003",
    "line-separator": "\u2028",
    "hangul-filler": "\u3164",
    "halfwidth-hangul-filler": "\uffa0",
    "hangul-choseong-filler": "\u115f",
    "braille-blank": "\u2800",
    "private-use": "\ue000",
    "nul-and-controls": "\x00\x07\x1b",
    "mixed": " \u200b\ufeff\u2060\u0301\u3164\u00a0\n\t",
}
VISIBLE = {
    "ascii-letter": "a",
    "digit": "4",
    "period": ".",
    "cjk": "\u4e2d",
    "accented-with-zwsp": "\u200be\u0301\u200b",
    "arrow": "\u2192",
    "infinity": "\u221e",
    "emoji": "\U0001f600",
    "superscript-two": "\u00b2",
    "vulgar-half": "\u00bd",
    "ellipsis": "\u2026",
    "hindi": "\u0915",
}


@pytest.mark.parametrize("name", sorted(INVISIBLE))
def test_invisible_only_text_has_no_visible_character(name):
    assert has_visible(INVISIBLE[name] * 3) is False


@pytest.mark.parametrize("name", sorted(VISIBLE))
def test_one_visible_character_is_enough(name):
    assert has_visible(INVISIBLE["mixed"] + VISIBLE[name] + INVISIBLE["mixed"]) is True


@pytest.mark.parametrize("name", sorted(INVISIBLE))
def test_an_invisible_think_block_is_not_well_formed(name):
    ok, why = think_format(f"<think>{INVISIBLE[name] * 5}</think><answer>4</answer>")
    assert ok is False and "think" in why


@pytest.mark.parametrize("name", sorted(INVISIBLE))
def test_an_invisible_answer_is_not_well_formed(name):
    junk = INVISIBLE[name] * 5
    assert think_format(f"<think>2+2=4</think>{junk}")[0] is False
    assert think_format(f"<think>2+2=4</think><answer>{junk}</answer>")[0] is False
    assert think_format(f"<think>2+2=4</think>\n<answer> {junk} </answer>\n")[0] is False


@pytest.mark.parametrize("name", sorted(VISIBLE))
def test_visible_blocks_stay_well_formed(name):
    v = VISIBLE[name]
    assert think_format(f"<think>{v}</think>{v}") == (True, "ok")
    assert think_format(f"<think>\u200b{v}</think><answer>\u200b{v}</answer>") == (True, "ok")


@pytest.mark.parametrize("char", ["\u200b", "\U000e0020", "\u0301", "\ue000"])
def test_ten_megabytes_of_invisible_characters_complete(char):
    n = 10_000_000
    assert think_format("<think>" + char * n + "</think>4")[0] is False
    assert think_format("<think>a</think><answer>" + char * n + "</answer>")[0] is False
    assert has_visible(char * n + "x") is True


def test_many_distinct_invisible_characters_complete():
    # every code point once (a set-based scan is bounded by the alphabet, not the length)
    everything = "".join(chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000)
    assert has_visible(everything) is True
    blanks = "".join(c for c in everything if not has_visible(c))
    assert len(blanks) > 1000 and has_visible(blanks) is False
