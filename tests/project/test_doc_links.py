"""Every markdown link in README.md and docs/*.md resolves (issue 39).

A link ``[text](target)`` whose target is not a URL (``http:``, ``https:``, ``mailto:``) must name a file or
folder that exists, relative to the page that holds it, and, where it has an anchor (``path#anchor`` or
``#anchor`` on the same page), a heading of that markdown page whose GitHub anchor is that anchor. Links
inside fenced code blocks and inline code are text, not links.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*```")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
EXTERNAL = ("http://", "https://", "mailto:")


def unfenced(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def prose(text: str) -> list[str]:
    """The page's lines outside fenced code blocks, without their inline code."""
    return [re.sub(r"`[^`]*`", "", line) for line in unfenced(text)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, links to their text, punctuation dropped
    (hyphens and underscores kept), spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@functools.cache
def anchors(page: Path) -> frozenset[str]:
    """Every anchor of a markdown page (a repeated heading gets -1, -2, … as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for line in unfenced(page.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def broken(page: Path) -> list[str]:
    """The links of one page that do not resolve, each with why."""
    out = []
    for line in prose(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if target.startswith(EXTERNAL):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                out.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                out.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    return out


def test_every_docs_link_resolves():
    bad = {page.relative_to(ROOT).as_posix(): broken(page) for page in PAGES}
    bad = {page: links for page, links in bad.items() if links}
    assert not bad, "links that do not resolve:\n" + "\n".join(f"  {p}: {x}" for p, xs in bad.items() for x in xs)


def test_the_pages_have_links_to_check():
    links = sum(len(LINK.findall(line)) for page in PAGES for line in prose(page.read_text(encoding="utf-8")))
    assert links >= 40, links
    readme = "\n".join(prose((ROOT / "README.md").read_text(encoding="utf-8")))
    for page in PAGES[1:]:  # the README links every doc
        assert f"](docs/{page.name})" in readme, f"README.md has no link to docs/{page.name}"


def test_slugs_are_github_s():
    assert slug("The reward-hacking alarm: `--grpo.alarm true`") == "the-reward-hacking-alarm---grpoalarm-true"
    assert slug("Options of `code`") == "options-of-code"
    assert (
        slug("Rollout–training mismatch, measured and corrected") == "rollouttraining-mismatch-measured-and-corrected"
    )
    assert slug("HTTP/JSON") == "httpjson"


def test_a_broken_link_fails(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## A section\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[fine](other.md#a-section) [here](#page) [gone](missing.md) [bad anchor](other.md#nope)\n"
        "[self](#nowhere) `[in code](missing2.md)`\n\n```\n[in a fence](missing3.md)\n```\n"
    )
    assert broken(page) == [
        f"missing.md: no file {tmp_path / 'missing.md'}",
        "other.md#nope: no heading with anchor #nope in other.md",
        "#nowhere: no heading with anchor #nowhere in page.md",
    ]
