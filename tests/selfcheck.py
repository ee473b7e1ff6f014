"""The self-check questions of a chapter, read from its markdown: each a ``<div class="selfcheck" id=...>`` with
options as ``<details><summary>option</summary> explanation </details>``, the explanation starting with
``**Right.**`` or ``**Not quite.**`` (solutions/README.md, "Self-check questions"). Shared by the tests that check
their form (tests/test_selfcheck.py) and the browser tests that answer them."""

from __future__ import annotations

import re
from dataclasses import dataclass

QUESTION = re.compile(r'<div class="selfcheck" id="(?P<id>[^"]+)">(?P<body>.*?)\n</div>', re.S)
OPTION = re.compile(r"<details><summary>(?P<summary>.*?)</summary>(?P<explanation>.*?)</details>", re.S)
RIGHT, WRONG = "**Right.**", "**Not quite.**"


@dataclass
class Option:
    summary: str
    explanation: str

    @property
    def right(self) -> bool:
        return self.explanation.startswith(RIGHT)


@dataclass
class Question:
    id: str
    stem: str
    options: list[Option]


def questions(markdown: str) -> list[Question]:
    found = []
    for match in QUESTION.finditer(markdown):
        body = match["body"]
        first = body.find("<details>")
        stem = body[:first].strip() if first >= 0 else body.strip()
        options = [Option(o["summary"].strip(), o["explanation"].strip()) for o in OPTION.finditer(body)]
        found.append(Question(match["id"], stem, options))
    return found


def answer_one_right_and_one_wrong(page, question_css: str, rights: list[bool]) -> dict:
    """Click the right option of the question ``question_css`` selects and one wrong one (``rights``: whether each
    option is the right one); returns what was shown after each click: {"right": text, "wrong": text}."""
    shown = {}
    for kind in ("right", "wrong"):
        index = rights.index(kind == "right")
        option = page.locator(f"{question_css} details").nth(index)
        option.locator("summary").click()
        shown[kind] = option.evaluate("d => d.open ? [...d.children].filter(c => c.tagName !== 'SUMMARY')"
                                      ".map(c => c.innerText).join(' ').trim() : ''")
    return shown
