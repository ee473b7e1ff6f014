"""The rendered book: built strictly from every page, every TOC entry rendered, glued numbers present."""

from __future__ import annotations

import re

import pytest

from support import toc_pages

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("book")]


def test_every_toc_page_is_rendered_without_warnings(built_book):
    html, log = built_book
    sphinx_warnings = [line for line in log.splitlines() if ": WARNING:" in line or line.startswith("WARNING:")]
    assert not sphinx_warnings, "\n".join(sphinx_warnings[:20])
    for page in toc_pages():
        assert (html / f"{page}.html").is_file(), f"{page} is in _toc.yml but was not rendered"


def test_chapters_render_from_lessons_and_hide_no_glue(built_book):
    html, _ = built_book
    for page in toc_pages():
        text = (html / f"{page}.html").read_text()
        assert "{glue:" not in text and "glue:text" not in text, f"{page}: an unresolved glue reference"
        assert not re.search(r"BEGIN (SOLUTION|HIDDEN TESTS|MARK SCHEME)", text), f"{page} shows grading internals"
