"""Answer extraction by plain string scanning: linear time, nothing evaluated."""

from __future__ import annotations

THINK_CLOSE = "</think>"


def strip_think(text: str) -> str:
    """The text after the last ``</think>`` (all of it when there is none)."""
    i = text.rfind(THINK_CLOSE)
    return text if i < 0 else text[i + len(THINK_CLOSE) :]


def boxed_all(text: str) -> list[str]:
    """Contents of every ``\\boxed{…}`` / ``\\fbox{…}`` (nested braces balanced), in order.

    >>> boxed_all(r"so \\boxed{\\frac{1}{2}} and \\boxed{3}")
    ['\\\\frac{1}{2}', '3']
    """
    out: list[str] = []
    i = 0
    while True:
        starts = [j for j in (text.find("\\boxed", i), text.find("\\fbox", i)) if j >= 0]
        if not starts:
            return out
        j = min(starts)
        k = j + (6 if text.startswith("\\boxed", j) else 5)
        while k < len(text) and text[k] == " ":
            k += 1
        if k >= len(text) or text[k] != "{":
            i = k
            continue
        depth, m = 0, k
        while m < len(text):
            c = text[m]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            m += 1
        if depth != 0:
            return out  # unbalanced: not a complete answer
        out.append(text[k + 1 : m])
        i = m + 1


def answer_tag(text: str) -> str | None:
    """Content of the last ``<answer>…</answer>``."""
    end = text.rfind("</answer>")
    if end < 0:
        return None
    start = text.rfind("<answer>", 0, end)
    return None if start < 0 else text[start + len("<answer>") : end]


def extract_answer(completion: str) -> str | None:
    """The last boxed answer after the reasoning, else the last <answer> tag, else None."""
    visible = strip_think(completion)
    boxed = boxed_all(visible)
    if boxed and boxed[-1].strip():
        return boxed[-1].strip()
    tag = answer_tag(visible)
    if tag is not None and tag.strip():
        inner = boxed_all(tag)
        return (inner[-1] if inner else tag).strip()
    return None
