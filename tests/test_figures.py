"""Figures in the built book are numbered and captioned, and the chapters' prose points at them by number.

A chapter's figures are the pictures in its cells' outputs: matplotlib figures and the default picture of each
explorer (posenc/explorer.py). The source notebook gives each figure cell a caption and a name in its metadata,
``"mystnb": {"figure": {"caption": "...", "name": "fig-..."}}``; myst-nb wraps the output in a figure, Sphinx
numbers it (numfig, "Figure %s"), and the prose writes {numref}`fig-...` where it used to write "the figure
below". The rules, checked in the HTML of every chapter of the TOC:

1. Every picture in a cell output sits in a numbered figure: a <figure> with an id, whose caption has a number
   ("Figure N") and a text that reads as a caption (a sentence of at least 12 words, capitalised, ending with a
   full stop, and not the picture's alt text over again).
2. Every numbered figure of a chapter is referred to by number at least once in its own chapter.
3. The prose (paragraphs and list items outside cell inputs, outputs and captions) does not point at a figure by
   place: none of "figure/plot/picture/panel/chart/heatmap/graph/explorer below|above" or "below, the figure".
   A paragraph that speaks of "the figure" (or this/that plot, picture, chart, heatmap, graph) or of a
   "left/right/top/bottom panel" also holds a numbered reference; the rule is per paragraph, so it cannot tell
   which figure such a phrase means, only that the reader has a number to go to. "Figure N" typed by hand is
   only allowed for a paper's figure ("their Figure 1", "RoFormer's Figure 2").
4. Every numbered reference on every page of the book resolves: it is a link to a figure that exists on its
   target page, and its text is that figure's number.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from support import toc_chapters, toc_pages

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("book")]

NUMBER = re.compile(r"^Figure \d+$")
FIGURE_NOUN = r"(?:figures?|plots?|pictures?|panels?|charts?|heatmaps?|graphs?|explorers?)"
BY_PLACE = re.compile(rf"\b{FIGURE_NOUN}\s+(?:below|above)\b"
                      rf"|\b(?:below|above)\s*,?\s+(?:is\s+|are\s+)?(?:the|a|an)\s+{FIGURE_NOUN}\b", re.I)
DEICTIC = re.compile(r"\b(?:the|this|that|these|those)\s+(?:figures?|plots?|pictures?|charts?|heatmaps?|graphs?)\b"
                     r"|\b(?:left|right|top|bottom|upper|lower|middle)\s+(?:panels?|plots?|heatmaps?)\b", re.I)
TYPED_NUMBER = re.compile(r"\b(?:Figure|Fig\.)\s*\d+")
PAPERS_FIGURE = re.compile(r"(?:\btheir|['’]s)\s+$")  # what may stand before a hand-typed "Figure N"
MIN_CAPTION_WORDS = 12


@lru_cache(maxsize=None)
def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(), "html.parser")


def article(path: Path):
    return soup(path).select_one("article.bd-article") or soup(path)


def numbered_refs(node) -> list:
    """The numbered references ({numref}) inside ``node``: Sphinx renders each as a span.std-numref."""
    return node.select("span.std-numref")


def prose(page):
    """The paragraphs and list items a reader reads as the chapter's text: not code, outputs or captions."""
    for node in page.select("p, li"):
        if node.find_parent(["figcaption", "pre", "table"]) or node.find_parent(
                class_=["cell_input", "cell_output", "highlight"]):
            continue
        if node.name == "li" and node.find("p"):
            continue  # its paragraphs are checked on their own
        yield node


def text_of(node) -> str:
    return " ".join(node.get_text(" ").split())


@pytest.fixture(scope="module")
def chapters(built_book):
    html, _ = built_book
    return {chapter: html / f"{chapter}.html" for chapter in toc_chapters()}


def test_every_picture_in_a_chapter_is_a_numbered_captioned_figure(chapters):
    problems, count = [], 0
    for chapter, path in chapters.items():
        for img in article(path).select(".cell_output img"):
            count += 1
            where = f"{chapter}: picture {img.get('alt', img.get('src', ''))[:70]!r}"
            figure = img.find_parent("figure")
            if figure is None or not figure.get("id"):
                problems.append(f"{where} is not in a named figure (cell metadata mystnb.figure)")
                continue
            number = figure.select_one("figcaption .caption-number")
            caption = figure.select_one("figcaption .caption-text")
            if number is None or not NUMBER.match(text_of(number)):
                problems.append(f"{where}: figure {figure['id']} has no number")
            text = text_of(caption) if caption is not None else ""
            alt = " ".join((img.get("alt") or "").split())
            if (len(text.split()) < MIN_CAPTION_WORDS or not text[:1].isupper() or not text.endswith(".")
                    or text == alt):
                problems.append(f"{where}: figure {figure['id']} caption is not a sentence of its own: {text!r}")
    assert count, "no picture found in any chapter: is the book built?"
    assert not problems, f"{len(problems)} of {count} pictures:\n" + "\n".join(problems)


def test_every_numbered_figure_is_referred_to_by_number(chapters):
    unreferenced = []
    for chapter, path in chapters.items():
        page = article(path)
        links = [urlsplit(ref.find_parent("a")["href"]) for ref in numbered_refs(page)
                 if ref.find_parent("a", href=True)]
        targets = {unquote(link.fragment) for link in links if not link.path}  # links within the page
        for figure in page.select("figure[id]"):
            if figure.select_one("figcaption .caption-number") and figure["id"] not in targets:
                unreferenced.append(f"{chapter}: {figure['id']}")
    assert not unreferenced, "figures the text never names by number:\n" + "\n".join(unreferenced)


def test_prose_points_at_figures_by_number_not_by_place(chapters):
    problems = []
    for chapter, path in chapters.items():
        for node in prose(article(path)):
            text = text_of(node)
            for match in BY_PLACE.finditer(text):
                problems.append(f"{chapter}: {match.group(0)!r} in: {text[:160]}")
            if not numbered_refs(node):
                for match in DEICTIC.finditer(text):
                    problems.append(f"{chapter}: {match.group(0)!r} without a figure number in: {text[:160]}")
            plain = copy.copy(node)  # the text with every numbered reference taken out
            for ref in plain.select("a span.std-numref"):
                ref.find_parent("a").replace_with("[numbered reference]")
            plain_text = text_of(plain)
            for match in TYPED_NUMBER.finditer(plain_text):
                if not PAPERS_FIGURE.search(plain_text[:match.start()]):
                    problems.append(f"{chapter}: hand-typed {match.group(0)!r} in: {plain_text[:160]}")
    assert not problems, "prose that points at a figure by place or by a typed number:\n" + "\n".join(problems)


def test_every_numbered_reference_resolves_to_its_figure(built_book):
    html, _ = built_book
    problems, count = [], 0
    for name in toc_pages():
        path = html / f"{name}.html"
        for ref in numbered_refs(article(path)):
            count += 1
            link = ref.find_parent("a", href=True)
            if link is None:
                problems.append(f"{name}: unresolved reference {text_of(ref)!r}")
                continue
            parts = urlsplit(link["href"])
            target_path = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if not target_path.is_file():
                problems.append(f"{name}: {link['href']} points at no page")
                continue
            figure = soup(target_path).find(id=unquote(parts.fragment))
            if figure is None or figure.name != "figure":
                problems.append(f"{name}: {link['href']} is not a figure")
                continue
            number = figure.select_one("figcaption .caption-number")
            if number is None or text_of(number) != text_of(ref):
                problems.append(f"{name}: {text_of(ref)!r} links to {link['href']}, numbered "
                                f"{text_of(number) if number else None!r}")
    assert count, "no numbered reference in the book"
    assert not problems, "\n".join(problems)
