"""The book's other editions, checked in what they produce: the self-study edition (`make book-selfstudy`: a
worked solution folded under every exercise, and no hidden test or rubric, in the page or in its download; the
student book still without any of it), and the PDF of the whole book (`make book-pdf`: every page in the TOC's
order, each chapter's title, every explorer's default picture, no code or output cut off at the page's edge).

Both reuse the session's builds (conftest.py: built_book, built_selfstudy)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

import book_pdf  # tools/ (on the path through support.py)
import selfstudy_book
from autograder import course
from support import TOC, toc_chapters, toc_pages

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("book")]

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)
MIN_CHARS = 12  # shorter code lines ("return x") also occur in honest narrative code
MIN_WORDS = 25  # characters of a prose line worth looking for


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def prose(line: str) -> str | None:
    """A Markdown line as the page shows its words, or None for a line whose rendering differs from its
    source (maths, roles, links, quotes and dashes that Sphinx makes typographic)."""
    if any(mark in line for mark in ("$", "{", "](", "'", '"', "--", "...", "|", "<", "_", "`")):
        return None
    line = re.sub(r"^\s*(#+|>|\d+\.|[-*+])\s+", "", line)  # a heading's or list item's marker
    words = normalise(line.replace("*", ""))  # emphasis
    return words if len(words) >= MIN_WORDS else None


def name_of(chapter: str) -> str:
    return Path(chapter).name


@lru_cache(maxsize=None)
def notebook(path: Path) -> dict:
    return json.loads(path.read_text())


@lru_cache(maxsize=None)
def lesson_text(name: str) -> str:
    cells = notebook(course.lesson_notebook(name))["cells"]
    return normalise(" ".join("".join(c["source"]) for c in cells))


def solution_cells(name: str) -> list[dict]:
    return [c for c in notebook(course.source_notebook(name))["cells"] if selfstudy_book.nbgrader(c).get("solution")]


def shown_lines(cell: dict) -> list[str]:
    """Lines of a solution cell that its worked solution must show: the code (without nbgrader's markers), or
    the model answer's prose."""
    src = "".join(cell["source"])
    if cell["cell_type"] == "code":
        return [normalise(line) for line in selfstudy_book.solution_code(src).splitlines()
                if len(normalise(line)) >= MIN_CHARS]
    return [words for words in map(prose, selfstudy_book.model_answer(src).splitlines()) if words]


def secret_lines(name: str) -> list[tuple[str, str]]:
    """(what, line) for each line of the source notebook's hidden tests and rubrics that the lesson does not
    contain anyway."""
    found = []
    for cell in notebook(course.source_notebook(name))["cells"]:
        src = "".join(cell["source"])
        for region in HIDDEN.findall(src):
            found += [("hidden test", normalise(line)) for line in region.splitlines()
                      if len(normalise(line)) >= MIN_CHARS]
        if cell["cell_type"] == "markdown" and selfstudy_book.nbgrader(cell).get("solution"):
            answer = selfstudy_book.model_answer(src)
            rubric = src[src.index(answer) + len(answer):] if answer else src
            found += [("rubric", words) for words in map(prose, rubric.splitlines()) if words]
    return [(what, line) for what, line in found if line not in lesson_text(name)]


def article(path: Path):
    page = BeautifulSoup(path.read_text(), "html.parser")
    return page.select_one("article.bd-article") or page


# --- The self-study edition -------------------------------------------------------------------------------

def test_selfstudy_edition_folds_a_worked_solution_under_every_exercise(built_selfstudy):
    html, _ = built_selfstudy
    assert "(self-study edition)" in BeautifulSoup((html / "book" / "intro.html").read_text(), "html.parser").title.text
    problems, checked = [], 0
    for chapter in toc_chapters():
        name = name_of(chapter)
        page = html / selfstudy_book.FOLDER / name / f"{name}.html"
        assert page.is_file(), f"{page.relative_to(html)} was not built"
        blocks = article(page).select(f"details.{selfstudy_book.CSS_CLASS}")
        cells = solution_cells(name)
        if len(blocks) != len(cells):
            problems.append(f"{name}: {len(blocks)} worked solutions for {len(cells)} exercise cells")
            continue
        for block, cell in zip(blocks, cells):
            grade_id = selfstudy_book.nbgrader(cell)["grade_id"]
            summary = block.find("summary")
            if summary is None or normalise(summary.get_text()) != selfstudy_book.SUMMARY:
                problems.append(f"{name} {grade_id}: the block is not labelled '{selfstudy_book.SUMMARY}'")
            if block.has_attr("open"):
                problems.append(f"{name} {grade_id}: the worked solution is open, not folded")
            text = normalise(block.get_text(""))
            lines = shown_lines(cell)
            if not lines and len(text) < 80:
                problems.append(f"{name} {grade_id}: the worked solution is empty")
            missing = [line for line in lines if line not in text]
            problems += [f"{name} {grade_id}: the worked solution lacks {line!r}" for line in missing[:3]]
            if "rubric" in text.lower():
                problems.append(f"{name} {grade_id}: the worked solution shows its rubric")
            checked += len(lines)
    assert not problems, "\n".join(problems[:30])
    assert checked > 100, f"only {checked} lines of worked solutions were compared"


def test_selfstudy_edition_shows_no_hidden_test_or_rubric(built_selfstudy):
    """Neither in the page nor in the notebook its download button gives."""
    html, _ = built_selfstudy
    leaks, checked = [], 0
    for chapter in toc_chapters():
        name = name_of(chapter)
        page = html / selfstudy_book.FOLDER / name / f"{name}.html"
        download = html / "_sources" / selfstudy_book.FOLDER / name / f"{name}.ipynb"
        assert download.is_file(), f"no downloadable notebook {download.relative_to(html)}"
        shown = {"page": normalise(article(page).get_text("")),
                 "download": normalise(" ".join("".join(c["source"]) for c in json.loads(download.read_text())["cells"]))}
        lines = secret_lines(name)
        kinds = {what for what, _ in lines}
        assert {"hidden test", "rubric"} <= kinds, f"{name}: found only {kinds} in the source (is the pattern right?)"
        checked += len(lines)
        for where, text in shown.items():
            leaks += [f"{name} ({where}, {what}): {line}" for what, line in lines if line in text]
            if re.search(r"(BEGIN|END) (HIDDEN TESTS|SOLUTION|MARK SCHEME)", text):
                leaks.append(f"{name} ({where}): nbgrader's region markers")
    assert not leaks, "the self-study edition shows grading internals:\n" + "\n".join(leaks[:30])
    assert checked > 200


def test_student_book_has_no_worked_solution(built_book):
    html, _ = built_book
    problems = []
    for page in toc_pages():
        text = (html / f"{page}.html").read_text()
        if selfstudy_book.CSS_CLASS in text or f"<summary>{selfstudy_book.SUMMARY}</summary>" in text:
            problems.append(f"{page}: a worked solution")
    for chapter in toc_chapters():
        name = name_of(chapter)
        text = normalise(article(html / f"{chapter}.html").get_text(""))
        for cell in solution_cells(name):
            shown = [line for line in shown_lines(cell) if line not in lesson_text(name) and line in text]
            problems += [f"{name}: {line}" for line in shown[:3]]
    assert not (html / selfstudy_book.FOLDER).exists(), "the student book holds the self-study pages"
    assert not problems, "the student book shows solutions:\n" + "\n".join(problems[:30])


# --- The PDF ----------------------------------------------------------------------------------------------

def squeezed(text: str) -> str:
    """Text without spaces, lower case: PDF text extraction splits and joins words at will."""
    return re.sub(r"\s+", "", text).lower().replace("\u2019", "'")


def test_book_pdf_prints_every_page_with_the_explorers_default_pictures(built_book, browser, tmp_path):
    from PIL import Image, ImageChops
    from pypdf import PdfReader

    html, _ = built_book
    out = tmp_path / "posenc-course.pdf"
    printed = book_pdf.build(html, out, TOC, log=lambda *_: None, browser=browser)  # the session's Chromium
    reader = PdfReader(out)
    chapters = toc_chapters()
    assert [p.name for p in printed] == toc_pages()
    assert len(reader.pages) > len(chapters), f"{len(reader.pages)} pages for {len(chapters)} chapters"

    # One bookmark per page of the book, in order; page i of the book runs from its bookmark to the next.
    starts = [reader.get_destination_page_number(item) for item in reader.outline]
    assert len(starts) == len(printed) and starts == sorted(starts), starts
    ranges = dict(zip(toc_pages(), zip(starts, starts[1:] + [len(reader.pages)])))

    problems, explorers = [], 0
    for chapter in chapters:
        first, end = ranges[chapter]
        h1 = article(html / f"{chapter}.html").find("h1")
        title = h1.get_text("").replace("#", "")
        if squeezed(title) not in squeezed(reader.pages[first].extract_text()):
            problems.append(f"{chapter}: its title {title.strip()!r} is not on its first page ({first + 1})")

        # Every explorer's default picture is in the chapter's pages, pixel for pixel.
        page = html / f"{chapter}.html"
        defaults = [Image.open(page.parent / img["src"]).convert("RGB")
                    for img in article(page).select("img.posenc-explorer-frame")]
        explorers += len(defaults)
        embedded = [image for number in range(first, end) for image in reader.pages[number].images]
        for picture in defaults:
            same_size = [im for im in embedded if tuple(im.image.size) == picture.size]
            if not any(ImageChops.difference(im.image.convert("RGB"), picture).getbbox() is None for im in same_size):
                problems.append(f"{chapter}: an explorer's default picture ({picture.size}) is not in its pages")

    # Code and outputs wrap at the page's edge instead of being cut off; figures fit.
    cut = [f"{p.name}: {line}" for p in printed for line in p.overflow if line.startswith(("pre ", "img "))]
    problems += cut
    # No holes: code, tables and boxes split across pages, pictures are small enough to move without leaving
    # one; only a page's last sheet may be mostly empty.
    problems += book_pdf.holes(printed)
    assert not problems, "\n".join(problems[:30])
    assert explorers, "no explorer in the chapters (is the class still posenc-explorer-frame?)"


def test_selfstudy_navigation_leaves_out_the_instructor_guide(built_book, built_selfstudy, browser):
    """A reader studying alone is not sent to the instructor guide: no link to it is visible in the sidebar of any
    chapter, nor as "next" after the last chapter (book/_static/selfstudy.css); the student book still lists it."""
    from support import watched_context

    html, _ = built_selfstudy
    visible_links = """() => [...document.querySelectorAll('.bd-sidebar-primary a, .prev-next-area a')]
      .filter(a => a.offsetParent !== null).map(a => a.getAttribute('href'))"""
    with watched_context(browser) as watched:
        page = watched.new_page()
        chapters = toc_chapters()
        for name in (chapters[0], chapters[-1]):  # every page has the same sidebar; the last has the "next" link
            chapter = name.split("/")[-1]
            page.goto((html / selfstudy_book.FOLDER / chapter / f"{chapter}.html").as_uri(), wait_until="load")
            links = page.evaluate(visible_links)
            assert links and not [h for h in links if h.endswith("instructor.html")], (chapter, links)
        first = toc_chapters()[0]
        page.goto((built_book[0] / f"{first}.html").as_uri(), wait_until="load")
        assert [h for h in page.evaluate(visible_links) if h.endswith("instructor.html")], \
            "the student book's sidebar does not list the instructor guide (has its link changed?)"

