"""Every chapter checks its reader: 3 to 6 self-check questions, each with 3 or 4 options, exactly one right, and
every option explained, in the one form that renders with no kernel and no script in the book and in JupyterLab
(tests/selfcheck.py). Whether they open and read right in a browser: tests/test_reading_flow.py (the book) and
tests/test_lab.py (JupyterLab)."""

from __future__ import annotations

import re

import pytest

from autograder import course
from selfcheck import RIGHT, WRONG, questions

CHAPTERS = course.assignments()
ROLE = re.compile(r"\{[a-z:]+\}`")  # a MyST role: the summary line is raw HTML, where none renders


def chapter_questions(name):
    return questions(course.source_markdown(name).read_text())


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_chapter_has_explained_questions(name):
    found = chapter_questions(name)
    assert 3 <= len(found) <= 6, f"{name}: {len(found)} self-check questions, want 3 to 6"
    for q in found:
        assert q.stem.startswith("**Check yourself.**") and len(q.stem) > len("**Check yourself.**") + 10, \
            f"{name} {q.id}: the question must start with **Check yourself.** and ask something: {q.stem[:80]!r}"
        assert 3 <= len(q.options) <= 4, f"{name} {q.id}: {len(q.options)} options, want 3 or 4"
        rights = [o.summary for o in q.options if o.right]
        assert len(rights) == 1, f"{name} {q.id}: {len(rights)} options marked right, want exactly one"
        for o in q.options:
            assert o.explanation.startswith((RIGHT, WRONG)), \
                f"{name} {q.id}: option {o.summary!r} is explained without {RIGHT} or {WRONG}"
            kind = RIGHT if o.right else WRONG
            assert len(o.explanation) > len(kind) + 20, f"{name} {q.id}: option {o.summary!r} is not explained"
            assert "$" not in o.summary and not ROLE.search(o.summary), \
                f"{name} {q.id}: the option line {o.summary!r} holds math or a role, which no summary renders"


def test_question_ids_are_unique_across_the_book():
    ids = [q.id for name in CHAPTERS for q in chapter_questions(name)]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def test_the_reader_of_the_form_finds_what_is_malformed():
    """The parser the checks rest on: a right option, a wrong one, and a question without any right option."""
    text = ('<div class="selfcheck" id="selfcheck-x">\n\n**Check yourself.** Which?\n\n'
            '<details><summary>A. one</summary>\n\n**Not quite.** because of this and that.\n\n</details>\n'
            '<details><summary>B. two</summary>\n\n**Right.** because of the other thing.\n\n</details>\n\n</div>\n'
            '<div class="selfcheck" id="selfcheck-y">\n\n**Check yourself.** And?\n\n'
            '<details><summary>A. one</summary>\n\n**Not quite.** no.\n\n</details>\n\n</div>\n')
    x, y = questions(text)
    assert (x.id, [o.right for o in x.options], x.options[1].summary) == ("selfcheck-x", [False, True], "B. two")
    assert (y.id, [o.right for o in y.options]) == ("selfcheck-y", [False])
