"""The chapters read as pages, in the built book at a laptop's width (1366 px, Chromium driven by Playwright):
no line of code or output is wider than the book's column, the code of hidden ("Show code") cells included; a
deliberate error shows its type and message, not a traceback; and no page shows a path of the machine that built it
(a traceback through site-packages, a build folder).

The convention these tests hold the chapters to is in solutions/README.md ("Reading flow")."""

from __future__ import annotations

import re

import pytest

import selfcheck
import support
from autograder import course
from support import watched_context

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("book")]

LAPTOP = {"width": 1366, "height": 900}
MACHINE_PATHS = re.compile(r"/work/|/root/|/home/|/tmp/|site-packages|/usr/lib/python")

# Opens every collapsed cell ("Show code"), so that hidden code has a width, and waits for the fonts.
OPEN_ALL = """async () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  await document.fonts.ready;
  await new Promise(r => setTimeout(r, 100));
}"""

# Every code or output block wider than its box: the cell's kind, the widths, and its longest line.
OVERFLOWS = """() => [...document.querySelectorAll('.cell_input pre, .cell_output pre')]
  .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
  .map(pre => {
    const cell = pre.closest('.cell');
    const lines = pre.textContent.split('\\n');
    const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
    return {exercise: !!(cell && cell.classList.contains('tag_skip-execution')),
            part: pre.closest('.cell_input') ? 'code' : 'output',
            scroll: pre.scrollWidth, client: pre.clientWidth, longest: longest.slice(0, 120)};
  })"""

# The page's text, hidden cells included, without scripts and styles.
PAGE_TEXT = """() => {
  const copy = document.body.cloneNode(true);
  copy.querySelectorAll('script, style, noscript').forEach(n => n.remove());
  return copy.textContent;
}"""


def overflows(browser, html, name) -> list[dict]:
    with watched_context(browser, viewport=LAPTOP) as watched:
        page = watched.new_page()
        page.goto((html / f"{name}.html").as_uri(), wait_until="load")
        page.evaluate(OPEN_ALL)
        return page.evaluate(OVERFLOWS)


def described(found: list[dict]) -> str:
    return "\n".join(f"  {'exercise ' if o['exercise'] else ''}{o['part']} {o['scroll']} px in a {o['client']} px box: "
                     f"{o['longest']!r}" for o in found)


@pytest.mark.parametrize("name", support.toc_chapters())
def test_no_code_or_output_wider_than_the_column(built_book, browser, name):
    """Every cell fits the column at 1366 px: teaching code, figure and explorer code behind "Show code", exercise
    and test cells (tag skip-execution), and every output. A reader never scrolls sideways to see the end of a line
    or of a result."""
    html, _ = built_book
    found = overflows(browser, html, name)
    assert not found, f"{name}: {len(found)} code or output blocks wider than the column at 1366 px:\n" + \
        described(found)


@pytest.mark.parametrize("name", support.toc_chapters())
def test_deliberate_errors_are_short_messages(built_book, browser, name):
    """A cell that shows an error on purpose prints the error's type and message; no traceback through library
    internals reaches the page."""
    html, _ = built_book
    with watched_context(browser, viewport=LAPTOP) as watched:
        page = watched.new_page()
        page.goto((html / f"{name}.html").as_uri(), wait_until="load")
        tracebacks = page.evaluate("() => [...document.querySelectorAll('.cell_output .traceback')]"
                                   ".map(t => (t.querySelector('pre') || t).textContent.trim()"
                                   ".split('\\n').slice(-1)[0].slice(0, 120))")
    assert not tracebacks, f"{name} shows {len(tracebacks)} tracebacks, ending in: {tracebacks}"


@pytest.mark.parametrize("name", support.toc_pages())
def test_no_build_machine_path_on_the_page(built_book, browser, name):
    """No page shows where the book was built: no traceback through site-packages, no /work/ or /tmp/ folder,
    in the text or in a collapsed cell."""
    html, _ = built_book
    with watched_context(browser, viewport=LAPTOP) as watched:
        page = watched.new_page()
        page.goto((html / f"{name}.html").as_uri(), wait_until="load")
        text = page.evaluate(PAGE_TEXT)
    leaks = [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ") for m in MACHINE_PATHS.finditer(text)]
    assert not leaks, f"{name} shows a build machine's path:\n" + "\n".join(f"  ...{s}..." for s in leaks[:10])


GRADING = re.compile(r"\bchecks\.\w+|from autograder import|### BEGIN HIDDEN|warnings_on_stdout")


@pytest.mark.parametrize("name", support.toc_chapters())
def test_no_grading_call_shows_until_the_reader_opens_it(built_book, browser, name):
    """A reader sees an exercise as its statement and the stub a student fills in: the setup cell that imports the
    checks and every test cell are folded behind one control (tools/lessons.py, fold_grading). The
    text the page renders (what a reader sees without opening anything) names no checks call; opening every fold
    shows them, so the tests are still there for whoever wants them."""
    html, _ = built_book
    with watched_context(browser, viewport=LAPTOP) as watched:
        page = watched.new_page()
        page.goto((html / f"{name}.html").as_uri(), wait_until="load")
        seen = page.evaluate("() => document.querySelector('main').innerText")
        page.evaluate(OPEN_ALL)
        opened = page.evaluate("() => document.querySelector('main').innerText")
    shown = [seen[max(0, m.start() - 60):m.end() + 20].replace("\n", " ") for m in GRADING.finditer(seen)]
    assert not shown, f"{name} shows grading code to a reader who opened nothing:\n" + \
        "\n".join(f"  ...{s}..." for s in shown[:10])
    assert GRADING.search(opened), f"{name}: no test cell found even with every fold open (the check saw nothing)"


# Every self-check question on the page: its id, and per option the summary, whether its explanation is rendered
# (a reader sees it) and the explanation's text (textContent: also while closed).
SELFCHECKS = """() => [...document.querySelectorAll('div.selfcheck')].map(q => ({
  id: q.id,
  options: [...q.querySelectorAll('details')].map(d => ({
    summary: d.querySelector('summary').innerText.trim(),
    visible: d.open,  // a closed <details> shows its summary only
    text: [...d.children].filter(c => c.tagName !== 'SUMMARY').map(c => c.innerText).join(' ').trim(),
  })),
}))"""
RAW_MYST = re.compile(r"\{[a-z:]+\}`|\$[^$\s]")  # a role or a dollar of math left unrendered


@pytest.mark.parametrize("name", support.toc_chapters())
def test_self_check_questions_answer_when_clicked(built_book, browser, name):
    """Each chapter's self-check questions render as questions whose explanations stay hidden until the reader
    picks an option; a reader who picks the right option of the first question reads "Right." and why, one who
    picks a wrong one reads "Not quite." and why, with math and terms rendered (no role or dollar left). Works on
    the static page: no kernel, no script of the book's."""
    html, _ = built_book
    chapter = name.split("/")[-1]
    expected = selfcheck.questions(course.source_markdown(chapter).read_text())
    with watched_context(browser, viewport=LAPTOP) as watched:
        page = watched.new_page()
        page.goto((html / f"{name}.html").as_uri(), wait_until="load")
        found = page.evaluate(SELFCHECKS)
        assert [q["id"] for q in found] == [q.id for q in expected], f"{name}: the page's questions differ"
        for q, source in zip(found, expected):
            assert len(q["options"]) == len(source.options), f"{name} {q['id']}: options lost on the page"
            assert not any(o["visible"] for o in q["options"]), f"{name} {q['id']}: an answer shows unasked"
            for o in q["options"]:
                raw = RAW_MYST.search(o["text"])
                assert not raw, f"{name} {q['id']} {o['summary']!r}: unrendered {raw.group()!r} in {o['text'][:120]!r}"
        shown = selfcheck.answer_one_right_and_one_wrong(page, f"div.selfcheck#{found[0]['id']}",
                                                         [o.right for o in expected[0].options])
    assert shown["right"].startswith("Right.") and len(shown["right"]) > 20, (name, shown)
    assert shown["wrong"].startswith("Not quite.") and len(shown["wrong"]) > 20, (name, shown)
