"""The rendered book: built strictly from every page, every TOC entry rendered, glued numbers present."""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("book")]


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    files += [c["file"] for c in toc.get("chapters", [])]
    return files


def test_every_toc_page_is_rendered_without_warnings(built_book):
    html, log = built_book
    sphinx_warnings = [line for line in log.splitlines() if ": WARNING:" in line or line.startswith("WARNING:")]
    assert not sphinx_warnings, "\n".join(sphinx_warnings[:20])
    for page in toc_files():
        assert (html / f"{page}.html").is_file(), f"{page} is in _toc.yml but was not rendered"


def test_chapters_render_from_lessons_and_hide_no_glue(built_book):
    html, _ = built_book
    for page in toc_files():
        text = (html / f"{page}.html").read_text()
        assert "{glue:" not in text and "glue:text" not in text, f"{page}: an unresolved glue reference"
        assert not re.search(r"BEGIN (SOLUTION|HIDDEN TESTS|MARK SCHEME)", text), f"{page} shows grading internals"
