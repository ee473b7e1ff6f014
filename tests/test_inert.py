"""Students' HTML and scripts never run in the grader's pages (autograder/preprocessors/inert_outputs.py,
autograder/feedback.py).

Fast: ``InertOutputs`` on each kind of hostile output (every MIME type but text and PNG/JPEG is removed, with a
note; malformed payloads do not crash it), on markdown answers (raw HTML shown as text, LaTeX untouched,
``javascript:`` links and mermaid blocks shown as plain text), on attachments; the course's own markdown is
left byte for byte; nbgrader's formgrade template renders an inert notebook with nothing executable from the
student; the configuration wires it all; the feedback page says "awaiting grading".

Slow (the real pipeline: ``python -m autograder grade`` in the sandbox, ``python -m autograder feedback``, a
JupyterLab server, Chromium): a hostile submission (HTML with ``<script>``, SVG with ``onload``, JavaScript,
Markdown and widget outputs, a forged PNG, ``<img onerror>``/``<script>``/``<iframe>``/``<svg>`` in the written
answer, a ``javascript:`` link, a raw HTML cell) is graded; its feedback page and its formgrader page (opened
directly and inside JupyterLab's formgrader panel, logged in) run none of it: no marker set, no request to the
contents API, no event handler or ``javascript:`` URL in the page, while the answer's LaTeX is typeset.
Controls show that the same markers do fire on pages built without these steps.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

import synthetic
from autograder.config import load_config
from autograder.preprocessors import inert_outputs as inert
from autograder.preprocessors.inert_outputs import (InertOutputs, inert_attachments, inert_markdown, inert_outputs,
                                                    markdown_problems)
from support import jupyter_lab, run_cli, watched_context, write_course_config
from synthetic import find_cell as _cell

ROOT = Path(__file__).resolve().parent.parent
NOTE_WORDS = "removed by the grader"


def _image(fmt: str) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (2, 2), (200, 30, 30)).save(buffer, format=fmt)
    return base64.b64encode(buffer.getvalue()).decode()


PNG, JPEG, GIF = _image("PNG"), _image("JPEG"), _image("GIF")
SVG = "<svg xmlns='http://www.w3.org/2000/svg' onload=\"alert(1)\"><script>alert(2)</script></svg>"


def _texts(outputs) -> list[str]:
    return [o.get("text") or o.get("data", {}).get("text/plain", "") for o in outputs]


# ---------------------------------------------------------------------------------------------------------
# Outputs

HOSTILE = {
    "text/html": "<script>alert(1)</script><img src=x onerror=alert(2)>",
    "application/javascript": "alert(1)",
    "image/svg+xml": SVG,
    "text/markdown": "<img src=x onerror=alert(1)>",
    "text/latex": "$x$ <img src=x onerror=alert(1)>",
    "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2, "version_minor": 0},
    "application/vnd.jupyter.widget-state+json": {"state": {}},
    "application/json": {"a": [1, 2]},
    "application/pdf": "JVBERi0xLjQK",
    "application/x-custom+evil": "<script>alert(1)</script>",
    "text/x-anything": "<b>x</b>",
}


@pytest.mark.parametrize("mime", sorted(HOSTILE))
@pytest.mark.parametrize("kind", ["display_data", "execute_result"])
def test_each_hostile_mime_type_is_replaced_by_a_note(mime, kind):
    extra = {"execution_count": 4} if kind == "execute_result" else {}
    output = new_output(kind, data={mime: HOSTILE[mime]}, metadata={mime: {"isolated": True}}, **extra)
    outputs, notes = inert_outputs([output])
    assert notes == 1 and len(outputs) == 1
    (new,) = outputs
    assert new.output_type == kind and new.metadata == {}
    assert set(new.data) == {"text/plain"}
    assert new.data["text/plain"] == f"[{mime} output {NOTE_WORDS}: students' HTML and scripts are not shown]"
    if kind == "execute_result":
        assert new.execution_count == 4


@pytest.mark.parametrize("mime", sorted(HOSTILE))
def test_an_existing_text_plain_stays_beside_the_note(mime):
    output = new_output("display_data", data={mime: HOSTILE[mime], "text/plain": "<IPython.core.display.HTML object>"},
                        metadata={"text/html": {"isolated": True}, "width": 10})
    outputs, notes = inert_outputs([output])
    assert notes == 1
    assert outputs[0].data == {"text/plain": "<IPython.core.display.HTML object>"} and outputs[0].metadata == {}
    assert outputs[1].data["text/plain"].startswith(f"[{mime} output {NOTE_WORDS}")


def test_text_images_streams_and_errors_are_kept():
    outputs = [
        new_output("stream", name="stdout", text="<script>alert(1)</script>\n"),
        new_output("stream", name="stderr", text="warning\n"),
        new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"},
                   metadata={"image/png": {"width": 9}}),
        new_output("display_data", data={"image/jpeg": JPEG}),
        new_output("execute_result", data={"text/plain": "0.5"}, execution_count=3),
        new_output("error", ename="ValueError", evalue="<b>bad</b>",
                   traceback=["\x1b[31mValueError\x1b[0m: <b>bad</b>"]),
    ]
    kept, notes = inert_outputs(outputs)
    assert notes == 0
    assert [o.output_type for o in kept] == [o.output_type for o in outputs]
    assert kept[0].text == "<script>alert(1)</script>\n"  # printed text is escaped by every template
    assert kept[2].data == {"image/png": PNG, "text/plain": "<Figure>"} and kept[2].metadata == {}
    assert kept[3].data == {"image/jpeg": JPEG}
    assert kept[4].data == {"text/plain": "0.5"} and kept[4].execution_count == 3
    assert kept[5].traceback == outputs[5].traceback and kept[5].evalue == "<b>bad</b>"


@pytest.mark.parametrize("payload", [
    'iVBORw0KGgo=" onerror="alert(1)',      # breaks out of the src attribute
    "not base64 at all!",
    base64.b64encode(SVG.encode()).decode(),  # base64, but of an SVG
    base64.b64encode(b"<html><script>alert(1)</script>").decode(),
    "",
])
def test_a_forged_png_or_jpeg_is_removed(payload):
    for mime in ("image/png", "image/jpeg"):
        outputs, notes = inert_outputs([new_output("display_data", data={mime: payload})])
        assert notes == 1 and outputs[0].data == {"text/plain": f"[invalid {mime} output {NOTE_WORDS}: "
                                                                "students' HTML and scripts are not shown]"}


def test_a_huge_image_is_removed():
    outputs, notes = inert_outputs([new_output("display_data", data={"image/png": PNG})], max_image_bytes=20)
    assert notes == 1 and "invalid image/png" in outputs[0].data["text/plain"]
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(10**6)).decode()
    assert inert.valid_image(big, "image/png", max_bytes=10**5) is None
    assert inert.valid_image(PNG[:40] + "\n" + PNG[40:], "image/png") == PNG  # nbformat's wrapped base64 is fine


@pytest.mark.parametrize("output", [
    {"output_type": "display_data", "data": {"text/plain": {"a": 1}}, "metadata": {}},
    {"output_type": "display_data", "data": {"text/plain": 5, "image/png": ["x", 3], "text/html": None}},
    {"output_type": "display_data", "data": "a string", "metadata": None},
    {"output_type": "display_data"},
    {"output_type": "execute_result", "data": {"text/html": 1}, "execution_count": "7"},
    {"output_type": "execute_result", "data": {"image/jpeg": {"nested": True}}, "execution_count": True},
    {"output_type": "stream", "name": "stdout", "text": None},
    {"output_type": "stream", "name": "<script>", "text": ["a", "b"]},
    {"output_type": "stream", "name": "stdout", "text": {"x": 1}},
    {"output_type": "error", "ename": None, "evalue": 3, "traceback": "not a list"},
    {"output_type": "error", "traceback": [1, None, "x"]},
    {"output_type": "update_display_data", "data": {"text/html": "<script>"}},
    {"output_type": 42},
    {},
    "a string",
    None,
    ["a", "list"],
])
def test_malformed_outputs_do_not_crash_and_stay_inert(output):
    outputs, _ = inert_outputs([output])
    for new in outputs:
        assert new.output_type in ("stream", "error", "display_data", "execute_result")
        nbformat.validate(new_notebook(cells=[new_code_cell("x", outputs=[new])]))
        for mime, value in new.get("data", {}).items():
            assert mime in ("text/plain", "image/png", "image/jpeg") and isinstance(value, str)
        if new.output_type == "stream":
            assert new.name in ("stdout", "stderr") and isinstance(new.text, str)


def test_outputs_that_are_not_a_list_give_none():
    assert inert_outputs(None) == ([], 0)
    assert inert_outputs({"output_type": "stream"}) == ([], 0)


def test_a_run_of_the_same_note_is_counted_once():
    outputs = [new_output("display_data", data={"application/javascript": f"alert({i})"}) for i in range(50)]
    outputs.append(new_output("display_data", data={"text/html": "<b>"}))
    kept, notes = inert_outputs(outputs)
    assert notes == 51 and len(kept) == 2
    assert kept[0].data["text/plain"].endswith("(x50)") and "application/javascript" in kept[0].data["text/plain"]
    assert "text/html" in kept[1].data["text/plain"]


def test_the_note_names_a_students_mime_type_harmlessly():
    data = {"<script>alert(1)</script>": "x", **{f"a/{i}": "x" for i in range(9)}}
    outputs, _ = inert_outputs([new_output("display_data", data=data)])
    note = outputs[0].data["text/plain"]
    assert "<" not in note and ">" not in note and "more" in note


def test_grades_are_unchanged():
    """nbgrader scores a test cell from its errors, its stderr and the text/plain of its result: all kept."""
    from nbgrader.utils import determine_grade

    meta = {"nbgrader": {"grade": True, "solution": False, "grade_id": "t", "points": 2, "locked": True}}
    html_out = new_output("display_data", data={"text/html": "<script>"})
    cases = [
        [html_out, new_output("execute_result", data={"text/plain": "0.5", "text/html": "<b>"}, execution_count=1)],
        [html_out, new_output("error", ename="E", evalue="", traceback=[])],
        [new_output("display_data", data={"application/javascript": "x"}), new_output("stream", name="stderr", text="w")],
        [new_output("display_data", data={"image/svg+xml": SVG, "text/plain": "svg"})],
    ]
    for outputs in cases:
        cell = new_code_cell("pass", metadata=meta, outputs=outputs)
        before = determine_grade(cell)
        cell.outputs, _ = inert_outputs(cell.outputs)
        assert determine_grade(cell) == before


# ---------------------------------------------------------------------------------------------------------
# Markdown

def render_markdown(source: str, attachments=None) -> str:
    """The HTML nbconvert's HTMLExporter (formgrader, feedback) makes of a markdown cell."""
    return MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments or {})).render(source)


def _rendered_problems(source: str, attachments=None) -> list[str]:
    """Executable bits in the HTML nbconvert makes of a markdown cell."""
    return executable_bits(render_markdown(source, attachments), marker=None)


HOSTILE_MARKDOWN = {
    "script": "<script>alert(1)</script>",
    "img onerror": "Look: <img src=x onerror=\"alert(1)\">",
    "iframe": "<iframe src=\"javascript:alert(1)\"></iframe>",
    "iframe srcdoc": "<iframe srcdoc=\"<script>alert(1)</script>\"></iframe>",
    "svg onload": "<svg onload=alert(1)><circle r=5 /></svg>",
    "raw link": "<a href=\"javascript:alert(1)\">click</a>",
    "style": "<style>body{display:none}</style>",
    "object": "<object data=\"data:text/html,<script>alert(1)</script>\"></object>",
    "form": "<form action=\"javascript:alert(1)\"><button>go</button></form>",
    "details": "<details open ontoggle=alert(1)>x</details>",
    "comment": "<!-- a hidden note --> visible",
    "markdown link": "[click](javascript:alert(1))",
    "mixed case link": "[click](JaVaScRiPt:alert(1))",
    "entity link": "[click](&#106;avascript:alert(1))",
    "autolink": "<javascript:alert(1)>",
    "vbscript": "[click](vbscript:msgbox)",
    "data link": "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "image": "![x](javascript:alert(1))",
    "mermaid": "```mermaid\n<img src=x onerror=alert(1)>\n```",
    "in a table": "| a |\n|---|\n| <img src=x onerror=alert(1)> |",
    "in a list": "- item <script>alert(1)</script>\n- <b onmouseover=alert(1)>x</b>",
    "in a heading": "# Title <img src=x onerror=alert(1)>",
    "after math": "$a$<img src=x onerror=alert(1)>$b$",
    "escaped dollar": "\\$<img src=x onerror=alert(1)>\\$",
    "between code spans": "`a` <script>alert(1)</script> `b`",
    "unclosed": "<img src=x onerror=alert(1)",
    "inequality without spaces": "so a<b and c>d holds",
    # the self-check form is the one raw HTML the course writes: anything beyond its exact shape is text
    "self-check div with a handler": '<div class="selfcheck" id="selfcheck-a" onclick="alert(1)">\n\nx\n\n</div>',
    "self-check summary with a script": "<details><summary><script>alert(1)</script></summary>\n\nx\n\n</details>",
    "self-check details with a style": '<details style="position:fixed;inset:0">\n\nx\n\n</details>',
}

# Raw HTML that runs nothing but is not the course's form either: escaped all the same (an id could shadow a
# global name of the grader's page, "DOM clobbering"; another class could borrow the page's styles).
NOT_THE_COURSES_FORM = {
    "an id of the page's": '<div class="selfcheck" id="jQuery">\n\nx\n\n</div>',
    "another class": '<div class="modal-backdrop" id="selfcheck-a">\n\nx\n\n</div>',
    "another tag": "<details><summary>A</summary>\n\n<b>x</b>\n\n</details>",
}


@pytest.mark.parametrize("name", sorted(NOT_THE_COURSES_FORM))
def test_raw_html_beyond_the_self_check_form_is_escaped(name):
    source = NOT_THE_COURSES_FORM[name]
    assert markdown_problems(source), f"{name} passed as the course's own form"
    assert inert_markdown(source) != source


def test_the_self_check_form_is_left_as_it_is():
    source = ('<div class="selfcheck" id="selfcheck-layout">\n\n**Check yourself.** Which?\n\n'
              '<details><summary>A. The half layout</summary>\n\n**Not quite.** Because $a<b$.\n\n</details>\n\n</div>')
    assert not markdown_problems(source), markdown_problems(source)
    assert inert_markdown(source) == source


@pytest.mark.parametrize("name", sorted(HOSTILE_MARKDOWN))
def test_hostile_markdown_renders_without_html(name):
    source = HOSTILE_MARKDOWN[name]
    safe = inert_markdown(source)
    assert not markdown_problems(safe), markdown_problems(safe)
    assert not _rendered_problems(safe)
    if safe == source:  # only what nbconvert never renders as HTML is left alone
        assert not _rendered_problems(source)


def test_raw_html_is_shown_as_text_and_the_rest_still_renders():
    source = ("**My answer.** Averaging gives $\\bar h = \\frac{1}{n}\\sum_i h_i$ with $a < b$ and $x<y$, so\n\n"
              "$$\\sum_{i<n} h_{\\pi(i)} = \\sum_{i<n} h_i$$\n\n"
              "<img src=x onerror=\"alert(1)\"> and <script>alert(2)</script>, `code <b>` too.\n\n"
              "```python\nprint('<b>')\n```\n")
    safe = inert_markdown(source)
    page = render_markdown(safe)
    assert not executable_bits(page, marker=None)
    # The tags read as text, the rest is Markdown as before.
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert '<img src=x onerror="alert(1)">' in text and "<script>alert(2)</script>" in text
    assert "<strong>My answer.</strong>" in page and "<code>code &lt;b&gt;</code>" in page
    # The maths are exactly what nbconvert makes of them without the HTML (MathJax reads this text).
    maths = ("$\\bar h = \\frac{1}{n}\\sum_i h_i$", "$a < b$", "$x<y$", "$$\\sum_{i<n} h_{\\pi(i)} = \\sum_{i<n} h_i$$")
    for math in maths:
        alone = render_markdown(math).strip().removeprefix("<p>").removesuffix("</p>")
        assert alone in page, (math, alone)
    assert '<div class="highlight">' in page and "print('<b>')" in text  # fenced code: highlighted, escaped


def test_a_javascript_link_makes_the_whole_answer_plain_text():
    source = "My answer $a<b$ and [see this](javascript:alert(document.cookie))"
    safe = inert_markdown(source)
    assert safe.startswith(inert.MARKDOWN_NOTE) and source in safe
    page = render_markdown(safe)
    assert "<a " not in page and "<pre><code>" in page and html.escape(source, quote=False) in page


def test_a_fence_inside_the_answer_cannot_close_the_plain_text_block():
    source = "[x](javascript:alert(1))\n````\n<script>alert(1)</script>\n````\n"
    safe = inert_markdown(source)
    assert not _rendered_problems(safe) and not markdown_problems(safe)
    assert "&lt;script&gt;" in render_markdown(safe)


def test_a_huge_markdown_cell_is_shown_as_plain_text_without_parsing(monkeypatch):
    """nbconvert's maths rules are quadratic on some input: a long cell is not parsed (nor rendered as
    Markdown) at all."""
    from autograder.preprocessors import inert_outputs

    parsed = []
    monkeypatch.setattr(inert_outputs, "markdown_problems", lambda *args: parsed.append(args) or [])
    source = "\\begin{x}" * 50_000 + "<img src=x onerror=alert(1)>"
    safe = inert_markdown(source)
    assert not parsed, "the huge cell was parsed"
    monkeypatch.undo()
    assert safe == inert.as_plain_text(source) and not _rendered_problems(safe)
    assert inert_markdown("<b>x</b>", max_chars=5) == inert.as_plain_text("<b>x</b>")


def _course_markdown():
    for folder in ("solutions", "lessons"):
        for path in sorted((ROOT / folder).glob("*/*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            for index, cell in enumerate(nb.cells):
                if cell.cell_type == "markdown":
                    yield f"{path.relative_to(ROOT)}[{index}]", cell


def test_the_courses_own_markdown_is_left_exactly_as_it_is():
    """Every markdown cell of the source and lesson notebooks (the model answers, their LaTeX) passes through
    unchanged: an honest answer is never touched."""
    cells = list(_course_markdown())
    assert len(cells) > 50
    changed = [name for name, cell in cells if inert_markdown(cell.source, cell.get("attachments")) != cell.source]
    assert not changed, f"InertOutputs would change the course's own markdown: {changed[:5]}"


@pytest.mark.parametrize("source", [
    "Plain text with $a<b$, $$x < y$$, \\begin{align}a &< b\\end{align} and `x<y`.",
    "- [ ] a task\n- [x] done\n\n| a | b |\n|:-|-:|\n| 1 | 2 |\n\nterm\n: definition\n\n~~struck~~",
    "A [link](https://example.org \"title\"), <https://example.org>, [mail](mailto:a@b.c), [anchor](#top), "
    "![figure](figures/plot.png) and ![inline](data:image/png;base64,iVBORw0KGgo=).",
    "# Heading\n\n> quote\n\n1. one\n2. two\n\n```python\nif a < b:\n    pass\n```\n\n    indented <code>",
    "Escapes: 5 \\< 6, \\$5 and a lone > sign, & ampersand, &lt;b&gt; written as entities.",
])
def test_ordinary_markdown_is_left_alone(source):
    assert inert_markdown(source) == source


def test_attachments_keep_only_raster_images():
    attachments = {
        "plot.png": {"image/png": PNG},
        "photo.jpg": {"image/jpeg": JPEG},
        "anim.gif": {"image/gif": GIF},
        "vector.svg": {"image/svg+xml": base64.b64encode(SVG.encode()).decode()},
        "page.html": {"text/html": base64.b64encode(b"<script>alert(1)</script>").decode()},
        "both.png": {"image/png": PNG, "image/svg+xml": base64.b64encode(SVG.encode()).decode()},
        "forged.png": {"image/png": 'x" onerror="alert(1)'},
        "odd": "not a bundle",
        7: {"image/png": PNG},
    }
    kept = inert_attachments(attachments)
    assert kept == {"plot.png": {"image/png": PNG}, "photo.jpg": {"image/jpeg": JPEG}, "anim.gif": {"image/gif": GIF},
                    "both.png": {"image/png": PNG}}
    assert inert_attachments("nonsense") == {} and inert_attachments(None) == {}


def _hostile_notebook():
    widget_state = {"application/vnd.jupyter.widget-state+json": {"state": {"m": {"model_name": "HTMLModel",
                    "state": {"value": "<img src=x onerror=alert(1)>"}}}, "version_major": 2, "version_minor": 0}}
    nb = new_notebook(metadata={"widgets": widget_state, "kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                         "language": "python"}})
    nb.cells = [
        new_markdown_cell("Answer with a picture ![p](attachment:plot.png) and <img src=x onerror=\"posencRan()\">",
                          attachments={"plot.png": {"image/png": PNG},
                                       "evil.svg": {"image/svg+xml": base64.b64encode(SVG.encode()).decode()}}),
        new_markdown_cell("An SVG attachment: ![s](attachment:evil.svg)",
                          attachments={"evil.svg": {"image/svg+xml": base64.b64encode(SVG.encode()).decode()}}),
        new_code_cell("display(HTML(...))", execution_count=1, outputs=[
            new_output("display_data", data={"text/html": "<script>posencRan()</script>", "text/plain": "<HTML>"}),
            new_output("display_data", data={"image/svg+xml": "<svg onload=\"posencRan()\"></svg>"}),
            new_output("display_data", data={"application/javascript": "posencRan()"}),
            new_output("display_data", data={"text/markdown": "<img src=x onerror=\"posencRan()\">"}),
            new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "m",
                                                                                          "version_major": 2,
                                                                                          "version_minor": 0}}),
            new_output("display_data", data={"image/png": 'x" onerror="posencRan()'}),
            new_output("execute_result", data={"text/html": "<b onmouseover=\"posencRan()\">x</b>"}, execution_count=1,
                       metadata={"text/html": {"isolated": True}}),
        ]),
        new_raw_cell("<script>posencRan()</script><img src=x onerror=\"posencRan()\">",
                     metadata={"raw_mimetype": "text/html"}),
    ]
    return nb


def test_the_preprocessor_makes_a_whole_notebook_inert():
    nb = _hostile_notebook()
    nb, _ = InertOutputs().preprocess(nb, {})
    assert "widgets" not in nb.metadata
    assert nb.cells[0].attachments == {"plot.png": {"image/png": PNG}}
    assert "&lt;img" in nb.cells[0].source and "![p](attachment:plot.png)" in nb.cells[0].source
    assert "attachments" not in nb.cells[1] and nb.cells[1].source.startswith(inert.MARKDOWN_NOTE)
    assert all(set(o.get("data", {})) <= {"text/plain"} for o in nb.cells[2].outputs)
    assert sum(NOTE_WORDS in t for t in _texts(nb.cells[2].outputs)) == 7
    nbformat.validate(nb)


@pytest.mark.parametrize("template", ["formgrade", "feedback"])
def test_nbgraders_own_templates_render_an_inert_notebook_with_nothing_to_run(template):
    """The page formgrader and generate_feedback make of the notebook: no student script, event handler or
    javascript: URL anywhere; the same notebook before InertOutputs has them (the check would see them)."""
    from nbconvert.exporters import HTMLExporter

    from autograder.feedback import BOOTSTRAP_CSS, NBGRADER_TEMPLATES

    exporter = HTMLExporter(template_name=template, extra_template_basedirs=[NBGRADER_TEMPLATES],
                            extra_template_paths=[NBGRADER_TEMPLATES, BOOTSTRAP_CSS], sanitize_html=False)
    resources = {"nbgrader": {"notebook": "nb", "score": 0, "max_score": 0, "late_penalty": 0},
                 "assignment_id": "a", "notebook_id": "nb", "submission_id": "s", "index": 0, "total": 1,
                 "base_url": "", "student": "st", "last_name": "L", "first_name": "F", "notebook_path": "x"}
    before, _ = exporter.from_notebook_node(_hostile_notebook(), resources=dict(resources))
    assert executable_bits(before, marker="posencRan"), "the control page should hold the student's scripts"
    nb, _ = InertOutputs().preprocess(_hostile_notebook(), {})
    after, _ = exporter.from_notebook_node(nb, resources=dict(resources))
    assert not executable_bits(after, marker="posencRan")


# ---------------------------------------------------------------------------------------------------------
# Configuration and the feedback page

def _config(tmp_path, monkeypatch):
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    return load_config()


def test_config_runs_inert_outputs_after_limit_output_and_sanitizes_pages(tmp_path, monkeypatch):
    from autograder.feedback import FeedbackExporter
    from nbgrader.preprocessors import LimitOutput

    cfg = _config(tmp_path, monkeypatch)
    steps = list(cfg.Autograde.autograde_preprocessors)
    assert InertOutputs in steps and steps.index(InertOutputs) == steps.index(LimitOutput) + 1
    names = [s.__name__ for s in steps]
    assert names.index("InertOutputs") < names.index("SaveAutoGrades")
    assert cfg.HTMLExporter.sanitize_html is True
    assert cfg.GenerateFeedback.exporter_class is FeedbackExporter


@pytest.mark.filterwarnings("ignore:Object of type:sqlalchemy.exc.SAWarning")  # nbgrader's add_submission
@pytest.mark.slow  # (autogrades and renders a feedback page)
def test_feedback_says_awaiting_grading_for_an_answer_nobody_graded(tmp_path, monkeypatch):
    """A gradebook with one written answer (no score at all), one graded by hand and one test cell: the page
    says "awaiting grading" for the first only, and counts it next to the total."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")  # alembic
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import GetGrades

    from autograder.feedback import FeedbackExporter

    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    cells = [("answer", "markdown", True, 2.0), ("graded", "markdown", True, 3.0), ("test", "code", False, 1.0)]
    with Gradebook(db) as gb:
        gb.add_assignment("hw")
        gb.add_notebook("nb", "hw")
        for name, kind, solution, points in cells:
            gb.add_grade_cell(name, "nb", "hw", max_score=points, cell_type=kind)
            gb.add_source_cell(name, "nb", "hw", cell_type=kind, locked=not solution, source="x", checksum="c")
            if solution:
                gb.add_solution_cell(name, "nb", "hw")
        gb.add_student("ada")
        gb.add_submission("hw", "ada")
        gb.find_grade("graded", "nb", "hw", "ada").manual_score = 1.5
        gb.find_grade("test", "nb", "hw", "ada").auto_score = 1.0
        gb.db.commit()
    nb = new_notebook(cells=[
        new_markdown_cell("My $a<b$ answer", metadata={"nbgrader": {"grade": True, "solution": True, "grade_id": n,
                                                                     "points": p, "locked": False}})
        for n, _, _, p in cells[:2]] + [
        new_code_cell("assert True", metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "test",
                                                            "points": 1.0, "locked": True}})])
    exporter = FeedbackExporter()
    exporter.register_preprocessor(GetGrades(), enabled=True)
    exporter.register_preprocessor(CSSHTMLHeaderPreprocessor(), enabled=True)
    resources = {"nbgrader": {"notebook": "nb", "assignment": "hw", "student": "ada", "db_url": db}}
    page, _ = exporter.from_notebook_node(nb, resources=resources)
    text = re.sub(r"\s+", " ", page)
    assert "(Score: 2.5 / 6.0; 1 answer awaiting grading)" in text
    assert 'Written response</a> (Score: awaiting grading / 2.0)' in text
    assert 'Written response</a> (Score: 1.5 / 3.0)' in text
    assert 'Test cell</a> (Score: 1.0 / 1.0)' in text
    assert text.count("Score: awaiting grading / 2.0 <a href=\"#top\">(Top)</a>") == 1
    assert "Score: 0.0 / 2.0" not in text
    assert "bootstrap" in page.lower() and "nbgrader_cell" in page  # nbgrader's look


# ---------------------------------------------------------------------------------------------------------
# What a page could run

class _Executable(HTMLParser):
    """Collects what a browser would run: inline script bodies, event-handler attributes, javascript:/data:
    URLs in attributes, and active elements (iframe, object, embed, svg, form, base, meta refresh)."""

    URL_ATTRS = {"href", "src", "action", "formaction", "data", "srcdoc", "xlink:href", "background", "poster"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found, self._script = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            kind = dict(attrs).get("type") or "text/javascript"
            self._script = [] if kind in ("text/javascript", "module", "application/javascript") else None
            if dict(attrs).get("src"):
                self.found.append(("script src", dict(attrs)["src"]))
        if tag in ("iframe", "object", "embed", "svg", "form", "base", "frame", "frameset", "applet", "math"):
            self.found.append(("element", f"<{tag} {attrs}>"))
        if tag == "meta" and dict(attrs).get("http-equiv", "").lower() == "refresh":
            self.found.append(("element", "<meta refresh>"))
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(("handler", f"{tag} {name}={value}"))
            elif name in self.URL_ATTRS and value and not inert.safe_url(value, image=tag == "img"):
                self.found.append(("url", f"{tag} {name}={value[:60]}"))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        if self._script is not None:
            self._script.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            self.found.append(("script", "".join(self._script)))
            self._script = None


def executable_bits(page: str, marker: str | None) -> list:
    """What in ``page`` would run; with a marker, only the bits that contain it (the page's own scripts, such
    as MathJax's loader, do not)."""
    parser = _Executable()
    parser.feed(page)
    parser.close()
    return [bit for bit in parser.found if marker is None or marker in bit[1]]


# ---------------------------------------------------------------------------------------------------------
# The real pipeline in a real browser (slow)

CHAPTER = "01_why_position"
STUDENT, BLANK = "mallory", "bob"
MATHJAX = ROOT / "node_modules" / "mathjax" / "es5" / "tex-chtml.js"


def mark(kind: str) -> str:
    """JavaScript that records that ``kind`` ran (in the top window, which a formgrader frame can reach) and
    asks the server for a solution notebook, as an attacker would."""
    return (f"(window.top.posencRan=(window.top.posencRan||[]).concat(['{kind}']),"
            f"document.title='PWNED {kind}',"
            f"fetch('/api/contents/solutions/{CHAPTER}/{CHAPTER}.ipynb?content=1&posenc_xss={kind}'))")


LINK = "javascript:void(window.top.posencRan=(window.top.posencRan||[]).concat(['md-link']))"  # no blanks: a link


def hostile_code() -> str:
    """Code for a solution cell: one display per kind of hostile output (payloads written with repr)."""
    def onerror(kind):
        return '<img src=x onerror="' + mark(kind) + '">'

    def script(kind):
        return "<script>" + mark(kind) + "</script>"

    svg = ("<svg xmlns='http://www.w3.org/2000/svg' onload=\"" + mark("svg-onload") + "\">"
           + script("svg-script") + "</svg>")
    widget = {"model_id": "x", "version_major": 2, "version_minor": 0}
    displays = [
        "HTML(%r)" % (script("html-script") + onerror("html-img")),
        "HTML(%r), metadata={'isolated': True}" % script("html-isolated"),
        "%r, raw=True" % {"image/svg+xml": svg, "text/plain": "an svg"},
        "Javascript(%r)" % mark("javascript"),
        "Markdown(%r)" % onerror("markdown-output"),
        "%r, raw=True" % {"text/latex": onerror("latex-output")},
        "%r, raw=True" % {"application/vnd.jupyter.widget-view+json": widget},
        "%r, raw=True" % {"image/png": 'iVBORw0KGgo=" onerror="' + mark("png-attr")},
        "%r, raw=True" % {"application/x-posenc-evil": script("custom-mime")},
    ]
    return ("from IPython.display import HTML, Javascript, Markdown, display\n"
            + "".join(f"display({d})\n" for d in displays))


ANSWER = (
    "**My answer.** The layer is permutation-equivariant: $\\mathrm{SA}(PX) = P\\,\\mathrm{SA}(X)$, so the rows are "
    "only reordered, and an average $\\bar h = \\frac{1}{n}\\sum_i h_i$ with $a < b$ is the same.\n\n"
    "$$\\sum_{i<n} h_{\\pi(i)} = \\sum_{i<n} h_i$$\n\n"
    f"<img src=x onerror=\"{mark('md-img')}\">\n"
    f"<script>{mark('md-script')}</script>\n"
    f"<svg onload=\"{mark('md-svg')}\"></svg>\n"
    f"<iframe src=\"javascript:{mark('md-iframe')}\"></iframe>\n"
    f"<details open ontoggle=\"{mark('md-details')}\">more</details>\n"
)


def hostile_submission():
    """The perfect submission of CHAPTER with hostile displays in its first solution cell, a hostile written
    answer (with LaTeX), a markdown cell with a javascript: link and a raw HTML cell."""
    builder = synthetic.Builder(CHAPTER)
    student = builder.perfect(STUDENT)
    nb = student.notebook
    solution = _cell(nb, builder.a.exercises[0].solutions[0])
    solution.source += "\n\n" + hostile_code()
    _cell(nb, builder.a.written[0]).source = ANSWER
    at = nb.cells.index(solution) + 1
    nb.cells.insert(at, new_markdown_cell(f"See [my notes]({LINK}) for more."))
    raw = f"<script>{mark('raw-script')}</script><img src=x onerror=\"{mark('raw-img')}\">"
    nb.cells.insert(at + 1, new_raw_cell(raw, metadata={"raw_mimetype": "text/html"}))
    return builder, student


def _cli(*args, course_dir: Path):
    return run_cli(*args, course_dir=course_dir, env={"PYTHONHASHSEED": "0", "MPLBACKEND": "Agg"}, timeout=900)


@pytest.fixture(scope="module")
def hostile_course(tmp_path_factory):
    """A course folder served by JupyterLab (root) with the chapter's source notebook in solutions/ (what the
    attack reads), the hostile submission and a blank one graded by the real pipeline, and their feedback."""
    root = tmp_path_factory.mktemp("inert_course")
    shutil.copytree(ROOT / "solutions" / CHAPTER, root / "solutions" / CHAPTER,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    write_course_config(root)
    course_dir = root / "course"
    builder, student = hostile_submission()
    submissions = root / "handed_in"
    student.write(submissions)
    builder.blank(BLANK).write(submissions)
    graded = _cli("grade", submissions, "--jobs", "1", course_dir=course_dir)
    assert graded.returncode == 0, f"grade failed:\n{graded.stdout[-4000:]}\n{graded.stderr[-4000:]}"
    feedback = _cli("feedback", CHAPTER, course_dir=course_dir)
    assert feedback.returncode == 0, f"feedback failed:\n{feedback.stdout[-4000:]}\n{feedback.stderr[-4000:]}"
    return root, course_dir, builder, student, graded.stdout


def _autograded(course_dir: Path, student: str) -> Path:
    return course_dir / "autograded" / student / CHAPTER / f"{CHAPTER}.ipynb"


def _mathjax_route(page):
    """Serve MathJax (3, from node_modules; the pages ask cdnjs for MathJax 2) so that the answers' LaTeX is
    typeset offline: the check that escaping the HTML left the maths intact."""
    if not MATHJAX.exists():
        pytest.fail(f"{MATHJAX} is missing: run `make assets` (npm ci)")
    shim = ("window.MathJax = {tex: {inlineMath: [['$','$'], ['\\\\(','\\\\)']], processEscapes: true},"
            " chtml: {fontURL: 'about:blank'}};\n") + MATHJAX.read_text()
    page.route(re.compile(r"https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/.*"),
               lambda route: route.fulfill(status=200, content_type="application/javascript", body=shim))


RAN_MARKERS = """() => window.posencRan || []"""
# The written answer's panel: its maths typeset, its text (the escaped tags read as text).
ANSWER_PANEL = """async (id) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  // the feedback page anchors the answer with <a name=id>; formgrader gives its score input that id
  const anchor = document.querySelector(`a[name="${id}"]`) || document.getElementById(id);
  const panel = anchor && anchor.closest('.nbgrader_cell');
  if (!panel) return null;
  const body = panel.querySelector('.rendered_html, .text_cell_render');
  return {math: panel.querySelectorAll('mjx-container').length, text: panel.innerText,
          raw: body ? body.innerText : ''};
}"""
# What in the notebook's part of the page could run: event handlers and javascript: URLs.
DOM_EXECUTABLE = """() => {
  const bad = [];
  const notebook = document.querySelector('#notebook');
  for (const el of notebook ? notebook.querySelectorAll('*') : []) {
    for (const a of el.attributes) {
      const v = (a.value || '').replace(/[\\x00-\\x20]/g, '').toLowerCase();
      const url = a.name === 'href' || a.name === 'src' || a.name === 'action';
      if (a.name.startsWith('on') || (url && v.startsWith('javascript:')))
        bad.push(`${el.tagName} ${a.name}=${a.value.slice(0, 60)}`);
    }
  }
  return bad;
}"""


def _settle(page, ms: int = 1500):
    page.wait_for_timeout(ms)  # onload/onerror handlers and fetches fire within this


def _check_page(page, frame, requests, written_id: str, where: str):
    ran = page.evaluate(RAN_MARKERS)
    assert not ran, f"{where}: student scripts ran: {ran}"
    assert "PWNED" not in page.title() and "PWNED" not in frame.title(), where
    attacks = [r for r in requests if "posenc_xss" in r or "/api/contents/solutions" in r]
    assert not attacks, f"{where}: requests made by student scripts: {attacks}"
    assert not frame.evaluate(DOM_EXECUTABLE), f"{where}: executable attributes in the page"
    panel = frame.evaluate(ANSWER_PANEL, written_id)
    assert panel is not None, f"{where}: no panel for the written answer {written_id}"
    assert panel["math"] >= 3, f"{where}: the answer's LaTeX was not typeset ({panel['math']} formulas)"
    assert "$" not in panel["raw"], f"{where}: raw TeX left in the answer: {panel['raw'][:300]}"
    assert "<img src=x onerror=" in panel["raw"] and "<script>" in panel["raw"], \
        f"{where}: the answer's HTML should read as text: {panel['raw'][:400]}"
    return panel


@pytest.mark.slow
@pytest.mark.xdist_group("formgrader")
def test_feedback_page_runs_no_student_script(hostile_course, browser, tmp_path):
    from nbgrader.api import Gradebook

    _, course_dir, builder, student, _ = hostile_course
    written = builder.a.written[0]

    # Grading: the hostile outputs cost nothing; the answer waits for a human.
    nb = nbformat.read(_autograded(course_dir, STUDENT), as_version=4)
    assert "widgets" not in nb.metadata
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert set(output.get("data", {})) <= {"text/plain", "image/png", "image/jpeg"}, output
    solution = _cell(nb, builder.a.exercises[0].solutions[0])
    assert not [o for o in solution.outputs if o.output_type == "error"], "the hostile code itself should run"
    notes = [t for t in _texts(solution.outputs) if NOTE_WORDS in t]
    assert len(notes) == 9, notes  # one per hostile display (the SVG's text/plain is kept beside its note)

    assert "&lt;img src=x onerror=" in _cell(nb, written).source
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", "posenc") as gb:
        first_tests = builder.a.exercises[0].tests
        for test in first_tests:
            assert gb.find_grade(test, CHAPTER, CHAPTER, STUDENT).score == student.expected[test], test
        answer = gb.find_grade(written, CHAPTER, CHAPTER, STUDENT)
        assert answer.needs_manual_grade and answer.auto_score is None and answer.manual_score is None

    page_file = course_dir / "feedback" / STUDENT / CHAPTER / f"{CHAPTER}.html"
    blank_file = course_dir / "feedback" / BLANK / CHAPTER / f"{CHAPTER}.html"
    text = re.sub(r"\s+", " ", page_file.read_text())
    assert "Written response</a> (Score: awaiting grading / " in text and "answer awaiting grading)" in text
    blank = re.sub(r"\s+", " ", blank_file.read_text())
    assert "awaiting grading" not in blank and "Written response</a> (Score: 0.0 / " in blank
    assert not executable_bits(page_file.read_text(), marker="posencRan")

    # The control: the same notebook rendered by plain nbconvert (the student's browser view of it, outputs
    # included) runs the markers: the checks below would see a script that ran.
    control = tmp_path / "control.html"
    _control_page(builder, student, control)

    with watched_context(browser) as watched:
        page = watched.new_page()
        page.goto(control.as_uri(), wait_until="load")
        _settle(page)
        ran = set(page.evaluate(RAN_MARKERS))
        page.click("text=my notes")
        try:  # a javascript: link runs after the click returns: wait for it (a failure is reported below)
            page.wait_for_function("() => (window.top.posencRan || []).includes('md-link')", timeout=10_000)
        except Exception:
            pass
        ran = set(page.evaluate(RAN_MARKERS))
        assert {"html-script", "html-img", "md-img", "md-script", "md-link"} <= ran, \
            f"the control page should have run the student's scripts (the detector is broken): {ran}"

        page = watched.new_page()
        _mathjax_route(page)
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_file.as_uri(), wait_until="load")
        _settle(page)
        panel = _check_page(page, page.main_frame, requests, written, "feedback page")
        assert "awaiting grading" in page.inner_text("body")
        for link in page.locator("#notebook a").all():  # clicking a link runs nothing either
            href = link.get_attribute("href") or ""
            assert inert.safe_url(href), href
        assert not watched.outside or all("cdnjs" in u for u in watched.outside), watched.outside
        assert "My answer." in panel["raw"]
        # The cell with the javascript: link is shown as plain text, after the grader's note.
        body = page.inner_text("#notebook")
        assert inert.MARKDOWN_NOTE.strip("*") in body and f"[my notes]({LINK})" in body


def _control_page(builder, student, target: Path):
    """The hostile notebook with the outputs its kernel makes, rendered by nbconvert's classic template with
    nothing removed or sanitized."""
    from nbconvert.exporters import HTMLExporter

    nb = nbformat.from_dict(json.loads(json.dumps(student.notebook)))
    solution = _cell(nb, builder.a.exercises[0].solutions[0])
    solution.outputs = [
        new_output("display_data", data={"text/html": f"<script>{mark('html-script')}</script>"
                                                      f"<img src=x onerror=\"{mark('html-img')}\">"}),
    ]
    page, _ = HTMLExporter(template_name="classic", sanitize_html=False).from_notebook_node(nb)
    target.write_text(page)


@pytest.mark.slow
@pytest.mark.xdist_group("formgrader")
def test_formgrader_runs_no_student_script(hostile_course, browser, tmp_path):
    """The submission opened in formgrader on a live JupyterLab, logged in: directly, and in JupyterLab's
    formgrader panel (a same-origin frame). Then a control: the autograded file replaced by one made without
    InertOutputs (as if graded before it existed): its HTML outputs are still neutralized (nbconvert's sanitizer,
    the second layer), while its raw markdown does run (the detector works, and InertOutputs is what protects
    markdown)."""
    root, course_dir, builder, student, _ = hostile_course
    written = builder.a.written[0]
    with jupyter_lab(root, cwd=root, tmp=tmp_path, env={"POSENC_COURSE_DIR": str(course_dir)}) as server:
        # The attack's target is there and readable with the instructor's credentials.
        assert server.get(f"/api/contents/solutions/{CHAPTER}/{CHAPTER}.ipynb?content=0")["type"] == "notebook"
        submissions = server.get(f"/formgrader/api/submitted_notebooks/{CHAPTER}/{CHAPTER}")
        ids = {s["student"]: s["id"] for s in submissions}
        assert STUDENT in ids, submissions
        url = f"{server.url}/formgrader/submissions/{ids[STUDENT]}/"

        with watched_context(browser) as watched:
            # 1. The formgrader page itself, logged in through the token.
            page = watched.new_page()
            _mathjax_route(page)
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(f"{url}?token={server.token}", wait_until="load")
            page.wait_for_selector(f'[id="{written}"]', state="attached", timeout=30_000)
            _settle(page)
            _check_page(page, page.main_frame, requests, written, "formgrader page")

            # 2. JupyterLab's formgrader panel: the frame the issue describes.
            lab = watched.new_page()
            _mathjax_route(lab)
            requests = []
            lab.on("request", lambda r: requests.append(r.url))
            lab.goto(f"{server.url}/lab?token={server.token}", wait_until="load")
            lab.wait_for_function("() => window.jupyterapp"
                                  " && window.jupyterapp.commands.hasCommand('nbgrader:open-formgrader')", timeout=90_000)
            lab.evaluate("() => window.jupyterapp.commands.execute('nbgrader:open-formgrader')")
            lab.wait_for_function("() => [...document.querySelectorAll('iframe')]"
                                  ".some(f => (f.src || '').includes('formgrader'))", timeout=30_000)
            frame = None
            for _ in range(150):
                frame = next((f for f in lab.frames if "/formgrader" in f.url), None)
                if frame is not None:
                    break
                lab.wait_for_timeout(200)
            assert frame is not None, f"no formgrader frame in JupyterLab: {[f.url for f in lab.frames]}"
            frame.goto(url, wait_until="load")
            frame.wait_for_selector(f'[id="{written}"]', state="attached", timeout=30_000)
            _settle(lab)
            sandbox = lab.evaluate("() => [...document.querySelectorAll('iframe')].filter(f => (f.src || '').includes"
                                   "('formgrader')).map(f => f.getAttribute('sandbox'))")
            _check_page(lab, frame, requests, written, f"JupyterLab's formgrader frame (sandbox={sandbox})")

            # 3. Control: an autograded notebook from before InertOutputs.
            path = _autograded(course_dir, STUDENT)
            kept = path.read_bytes()
            try:
                nb = nbformat.read(path, as_version=4)
                _cell(nb, written).source = ANSWER
                solution = _cell(nb, builder.a.exercises[0].solutions[0])
                solution.outputs.append(new_output("display_data", data={
                    "text/html": f"<script>{mark('html-script')}</script><img src=x onerror=\"{mark('html-img')}\">"}))
                solution.outputs.append(new_output("display_data", data={"application/javascript": mark("javascript")}))
                nbformat.write(nb, path)
                page = watched.new_page()
                answered = []
                page.on("response", lambda r: answered.append(r.status) if "posenc_xss" in r.url else None)
                page.goto(f"{url}?token={server.token}", wait_until="load")
                page.wait_for_selector(f'[id="{written}"]', state="attached", timeout=30_000)
                _settle(page)
                ran = set(page.evaluate(RAN_MARKERS))
                assert {"md-img", "md-script"} <= ran, \
                    f"the control's raw markdown should run (is the detector broken?): {ran}"
                assert 200 in answered, f"the control's script should have read the solutions: {answered}"
                assert not ran & {"html-script", "html-img", "javascript"}, \
                    f"HTML outputs ran in formgrader despite HTMLExporter.sanitize_html: {ran}"
            finally:
                path.write_bytes(kept)
        assert not watched.outside or all("cdnjs" in u or "unpkg" in u for u in watched.outside), watched.outside
