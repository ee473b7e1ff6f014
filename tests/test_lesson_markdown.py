"""The lessons' text as JupyterLab and Colab render it (book/_ext/lesson_markdown.py): no MyST role, target or
directive left in what a student reads, every conversion as the module says, and the book's MyST read back
exactly (book/_ext/lesson_source.py). Whether JupyterLab shows it: tests/test_lab.py."""

from __future__ import annotations

import json
import shutil
import sys

import nbformat
import pytest

import lessons  # tools/lessons.py (tools/ is on the path through support.py, which conftest imports)
from autograder import course
from support import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import lesson_markdown as lm  # noqa: E402  (book/_ext/lesson_markdown.py)

CHAPTERS = course.assignments()
CONTEXT = lm.Context(citations={"press2022train": "Press et al., 2022", "su2021roformer": "Su et al., 2021"},
                     sections={"sec-bias": "The bias"}, equations={"eq-a": 3}, figures={"fig-x": 5})


@pytest.mark.parametrize("source, expected", [
    ("as {cite}`press2022train` showed", "as [Press et al., 2022] showed"),
    ("{cite}`press2022train,su2021roformer`", "[Press et al., 2022; Su et al., 2021]"),
    ("{cite:t}`su2021roformer` call it", "Su et al. [2021] call it"),
    ("an {term}`ALiBi` model, a {term}`relative scheme <Relative position encoding>`",
     "an ALiBi model, a relative scheme"),
    ("see {ref}`sec-bias` and {ref}`that part <sec-bias>`", "see The bias and that part"),
    ("by {eq}`eq-a`", "by (3)"),
    ("as {numref}`fig-x` shows", "as the figure below shows"),
    ("misses by {glue:text}`residual_bits:.3f` of it", "misses by `residual_bits` of it"),
    ("(sec-x)=\n## A heading", "## A heading"),
    ("$$\na + b\n$$ (eq-a)\n", "$$\na + b \\tag{3}$$\n"),
    ("```{admonition} Key formulas\n:class: tip\n- one\n- two\n```", "> **Key formulas**\n>\n> - one\n> - two"),
    ("plain text with $x$ and `code`", "plain text with $x$ and `code`"),
])
def test_each_myst_construct_becomes_what_jupyter_renders(source, expected):
    assert lm.readable(source, CONTEXT, cell_index=2) == expected


def test_a_figure_above_and_one_of_another_page():
    assert lm.readable("see {numref}`fig-x`", CONTEXT, cell_index=9) == "see the figure above"
    assert lm.readable("see {numref}`fig-elsewhere`", CONTEXT, cell_index=9) == "see a figure of the book"


def test_an_unknown_citation_key_is_named():
    with pytest.raises(KeyError, match="nosuchkey"):
        lm.readable("{cite}`nosuchkey`", CONTEXT)


@pytest.mark.slow  # (2 to 4 s: the fast tier stays under a minute)
def test_labels_are_the_books_author_year_labels():
    labels = lm.citation_labels()
    assert labels["vaswani2017attention"] == "Vaswani et al., 2017"
    assert all(label[-4:].isdigit() or label[-5:-1].isdigit() for label in labels.values()), labels


@pytest.mark.parametrize("name", CHAPTERS)
def test_a_lesson_shows_no_myst_and_keeps_it_for_the_book(name):
    """Every markdown cell a student reads is free of MyST syntax; the MyST the book reads back is the source's
    own text, cell for cell (nbgrader's cells, a written answer's, are as nbgrader left them)."""
    lesson = json.loads(course.lesson_notebook(name).read_text())
    source = course.read_source(name)
    source_markdown = {c.get("id"): c.source for c in source.cells if c.cell_type == "markdown"}
    for cell in lesson["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        if cell["metadata"].get("nbgrader"):
            continue
        assert not lm.has_myst(text), f"{name} cell {cell.get('id')}: MyST left for the student: {text[:200]!r}"
        myst = cell["metadata"].get(lm.KEY, {}).get("myst")
        if myst is not None and cell.get("id") in source_markdown:
            assert myst == source_markdown[cell["id"]], f"{name} cell {cell['id']}: the kept MyST is not the source's"
    restored = nbformat.reads(json.dumps(lm.restore(lesson)), as_version=4)  # as Sphinx reads the notebook
    for cell in restored.cells:
        if cell.cell_type == "markdown" and cell.get("id") in source_markdown and not cell.metadata.get("nbgrader"):
            assert cell.source == source_markdown[cell.id], f"{name} cell {cell.id}: the book would read other text"


def test_a_sentence_that_begins_with_a_figure_begins_with_a_capital():
    assert lm.readable("Text.\n{numref}`fig-x` shows it, as {numref}`fig-x` does.", CONTEXT, cell_index=9) == \
        "Text.\nThe figure above shows it, as the figure above does."


@pytest.mark.slow
@pytest.mark.xdist_group("book")
@pytest.mark.parametrize("name", CHAPTERS)
def test_equation_numbers_are_the_books(built_book, name):
    """A lesson's equations carry the numbers the book prints beside them (the book numbers equations across
    its pages), so "(12)" in a student's notebook is equation 12 of the book's chapter."""
    import re

    html, _ = built_book
    page = (html / "lessons" / name / f"{name}.html").read_text()
    book = [int(n) for n in re.findall(r'<span class="eqno">\((\d+)\)', page)]
    lesson = json.loads(course.lesson_notebook(name).read_text())
    tags = [int(n) for cell in lesson["cells"] if cell["cell_type"] == "markdown"
            for n in re.findall(r"\\tag\{(\d+)\}", "".join(cell["source"]))]
    assert tags == book, f"{name}: the lesson numbers its equations {tags}, the book {book}"


@pytest.mark.slow
@pytest.mark.xdist_group("book")
def test_citation_labels_are_the_books(built_book):
    """Each work is cited in a lesson by the label the book's bibliography gives it, a/b included."""
    import re

    from bs4 import BeautifulSoup
    from pybtex.database import parse_file

    html, _ = built_book
    page = BeautifulSoup((html / "book" / "bibliography.html").read_text(), "html.parser")
    shown = {" ".join(entry.get_text(" ").split()).casefold(): entry.select_one("span.label").get_text().strip("[]")
             for entry in page.select("div.citation")}
    labels = lm.citation_labels()
    for key, entry in parse_file(str(lm.BIBLIOGRAPHY)).entries.items():
        title = " ".join(re.sub(r"[{}]", "", entry.fields["title"]).split())[:40].casefold()
        found = [label for text, label in shown.items() if title in text]
        assert found == [labels[key]], f"{key}: the book labels it {found}, the lessons {labels[key]!r}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_making_a_lesson_again_changes_nothing(name, tmp_path):
    """tools/lessons.py on a lesson it has already made (`make lessons` twice, or on one chapter) writes the same
    bytes: the MyST it kept is read back before the text is made readable again, and the install cell is not
    added twice."""
    committed = course.lesson_notebook(name)
    copy = course.lesson_notebook(name, tmp_path)
    copy.parent.mkdir(parents=True)
    shutil.copy(committed, copy)
    assert lessons.finish([name], release_dir=tmp_path) == [copy]
    assert copy.read_bytes() == committed.read_bytes()
