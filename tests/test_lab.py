"""JupyterLab, used the way a student uses it: a live server on localhost with a token, the nbgrader and
widget extensions present, a lesson opened and run through the server's kernel API, `nbgrader validate` on a
solved and an unsolved notebook, and the lesson run in Chromium with its explorer reacting to a slider."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

import selfcheck
from autograder import course
from autograder.course import source_notebook
from support import ROOT, SCREENSHOTS, VENV_BIN, jupyter_lab, watched_context

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("lab")]

LESSON = "01_why_position"  # run through the kernel API and validated
EXPLORER = "02_sinusoidal"  # run in the browser: its explorer has sliders and comes before the first exercise


def cell_kind(cell) -> str:
    tags = cell.get("metadata", {}).get("tags", [])
    if "skip-execution" in tags:
        return "exercise"
    if "raises-exception" in tags:
        return "raises"
    return "narrative"


def run_through_kernel(server, path: str, timeout: float = 120) -> list[tuple[int, str, dict]]:
    """Open the notebook through the contents API, start a kernel session for it and run every code cell over
    the kernel's websocket. Returns (cell index, kind, execute_reply content) per code cell."""
    import websocket

    model = server.get(f"/api/contents/{path}?content=1")
    assert model["type"] == "notebook" and model["content"]["cells"], f"the contents API did not return {path}"
    session = server.request("POST", "/api/sessions",
                             {"path": path, "type": "notebook", "name": Path(path).name, "kernel": {"name": "python3"}})
    kernel_id = session["kernel"]["id"]
    ws_url = server.url.replace("http://", "ws://") + f"/api/kernels/{kernel_id}/channels?token={server.token}"
    ws = websocket.create_connection(ws_url, timeout=timeout)
    results = []
    try:
        for index, cell in enumerate(model["content"]["cells"]):
            if cell["cell_type"] != "code":
                continue
            msg_id = uuid.uuid4().hex
            ws.send(json.dumps({
                "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                           "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
                "parent_header": {}, "metadata": {}, "channel": "shell",
                "content": {"code": cell["source"], "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False, "stop_on_error": False}}))
            while True:
                msg = json.loads(ws.recv())
                if msg.get("parent_header", {}).get("msg_id") == msg_id and msg["msg_type"] == "execute_reply":
                    results.append((index, cell_kind(cell), msg["content"]))
                    break
    finally:
        ws.close()
        server.request("DELETE", f"/api/sessions/{session['id']}")
    return results


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a copy of lessons/ (so nothing is written into the repository), started from the
    repository root like `make lab`, with a private course folder for nbgrader's exchange."""
    tmp = tmp_path_factory.mktemp("lab")
    lessons = tmp / "lessons"
    shutil.copytree(ROOT / "lessons", lessons, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    course = tmp / "course"
    # An assignment "released" into the course's exchange: the lab's assignment list must show it.
    outbound = course / "exchange" / "posenc" / "outbound" / LESSON
    outbound.mkdir(parents=True)
    shutil.copy(lessons / LESSON / f"{LESSON}.ipynb", outbound / f"{LESSON}.ipynb")
    with jupyter_lab(lessons, cwd=ROOT, tmp=tmp, env={"POSENC_COURSE_DIR": str(course)}, via_make=True) as server:
        yield server, lessons, course


def test_server_answers_with_token_and_refuses_without(lab):
    import urllib.error
    import urllib.request

    server, _, _ = lab
    status = server.get("/api/status")
    assert "started" in status, status
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server.url + "/api/contents", timeout=10)
    assert refused.value.code == 403


def test_nbgrader_and_widget_extensions_are_installed_and_enabled(lab):
    server, _, _ = lab
    extensions = server.get("/lab/api/extensions")
    names = {e["name"]: e for e in extensions}
    assert "jupyter-widgets-jupyterlab-manager" in names, sorted(names)
    nbgrader = [n for n in names if "nbgrader" in n]
    assert nbgrader, f"nbgrader's lab extension is not listed: {sorted(names)}"
    for name in nbgrader + ["jupyter-widgets-jupyterlab-manager"]:
        assert names[name].get("enabled", True), f"{name} is installed but disabled"
    # The server extensions answer: assignment list, validate (the student's side) and formgrader.
    from nbgrader import __version__

    listing = server.get("/assignments?course_id=posenc")
    assert listing["success"], f"nbgrader's assignment list failed: {listing}"
    released = [a["assignment_id"] for a in listing["value"] if a.get("status") == "released"]
    assert released == [LESSON], f"the lab does not read the course's exchange folder: {listing['value']}"
    assert server.get("/formgraders")["success"], "nbgrader's course list did not answer"
    assert server.get(f"/nbgrader_version?version={__version__}")["success"]
    # ... and the server says it loaded them (its log; `jupyter server extension list` takes half a minute).
    log = server.log_text()
    for extension in ("nbgrader.server_extensions.assignment_list", "nbgrader.server_extensions.validate_assignment",
                      "nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list", "jupyterlab"):
        assert f"{extension} | extension was successfully loaded" in log, f"{extension} not loaded:\n{log[-3000:]}"


def test_lesson_runs_through_the_server_kernel(lab):
    server, _, _ = lab
    results = run_through_kernel(server, f"{LESSON}/{LESSON}.ipynb")
    assert results, "no code cell ran"
    for index, kind, reply in results:
        if kind == "narrative":
            assert reply["status"] == "ok", (f"narrative cell {index} failed in the lab kernel: "
                                             f"{reply.get('ename')}: {reply.get('evalue')}")
        elif kind == "raises":
            assert reply["status"] == "error", f"cell {index} is tagged raises-exception but did not raise"
    # The kernel is the course's environment: posenc imports from .venv.
    assert sum(kind == "exercise" for _, kind, _ in results) > 0


def test_validate_passes_solved_and_fails_unsolved(lab, tmp_path):
    server, lessons, course = lab
    solved = lessons / "solved" / f"{LESSON}.ipynb"
    solved.parent.mkdir()
    shutil.copy(source_notebook(LESSON), solved)
    env = {"POSENC_COURSE_DIR": str(course), "PATH": f"{VENV_BIN}:/usr/bin:/bin"}
    nbgrader = str(VENV_BIN / "nbgrader")
    ok = subprocess.run([nbgrader, "validate", str(solved)], cwd=ROOT, capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and "Success! Your notebook passes all the tests." in ok.stdout, ok.stdout + ok.stderr
    # The unsolved lesson through the server, as the lab's Validate button does it (the same nbgrader Validator).
    import urllib.parse

    answer = server.request("POST", "/assignments/validate?" + urllib.parse.urlencode({"path": f"{LESSON}/{LESSON}.ipynb"}),
                            timeout=300)
    assert answer["success"], answer
    result = answer["value"] if isinstance(answer["value"], dict) else json.loads(answer["value"])
    assert result.get("failed"), f"the unsolved lesson passed validation: {result}"


@pytest.mark.xdist_group("lab")
def test_lesson_runs_in_the_browser_and_the_explorer_reacts(lab, browser):
    server, _, _ = lab
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with watched_context(browser, viewport={"width": 1300, "height": 1000}) as watched:
        page = watched.new_page()
        page.goto(f"{server.url}/lab/tree/{EXPLORER}/{EXPLORER}.ipynb?token={server.token}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                               " && window.jupyterapp.shell.currentWidget.sessionContext"
                               " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                               " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                               " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
                               timeout=90_000)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        # Run-all stops at the first exercise (a stub raises NotImplementedError); the explorer comes before it.
        # Its output is HTML with a script (posenc.explorer), which JupyterLab runs for output it trusts.
        explorer = page.locator(".jp-Notebook div.posenc-explorer[data-live=true]")
        try:
            explorer.first.wait_for(timeout=120_000)
        except Exception:
            page.screenshot(path=str(SCREENSHOTS / f"lab_{EXPLORER}_failed.png"), full_page=True)
            raise
        figure = explorer.first.locator("img.posenc-explorer-frame")
        before = figure.get_attribute("src")
        slider = explorer.first.locator("input[type=range]").first
        slider.scroll_into_view_if_needed()
        slider.focus()
        slider.press("ArrowLeft")
        page.wait_for_function("(before) => { const img = document.querySelector("
                               "'.jp-Notebook div.posenc-explorer img.posenc-explorer-frame');"
                               " return img && img.complete && img.getAttribute('src') !== before; }",
                               arg=before, timeout=30_000)
        title = figure.get_attribute("data-title")
        readout = explorer.first.locator("output").first.inner_text()
        assert readout in title, f"after moving the slider the readout {readout!r} is not in the title {title!r}"
        page.screenshot(path=str(SCREENSHOTS / f"lab_{EXPLORER}.png"))
        errors = [e for e in watched.errors if "NotImplementedError" not in e]
        assert not watched.outside, f"JupyterLab requested addresses off this machine: {watched.outside}"
        assert not errors, f"console errors in JupyterLab: {errors}"


# (JupyterLab's sanitizer renames a markdown element's id to data-jupyter-id: lab_question selects by it.)
# Scrolls the open notebook to the first cell whose source holds the text (and makes it the active cell).
SCROLL_TO_CELL = """(text) => {
  const widget = window.posencLesson || window.jupyterapp.shell.currentWidget;
  const notebook = widget && widget.content;
  if (!notebook || !notebook.model) return false;
  if (window.posencLesson) window.jupyterapp.shell.activateById(window.posencLesson.id);
  const index = notebook.model.sharedModel.cells.findIndex(c => c.getSource().includes(text));
  if (index < 0) return false;  // not loaded yet
  notebook.activeCellIndex = index;
  notebook.scrollToItem(index, 'center');
  return true;
}"""


def lab_question(question_id: str) -> str:
    return f'.jp-RenderedMarkdown div.selfcheck[data-jupyter-id="{question_id}"]'


# Opens a lesson in the running JupyterLab (no page load per lesson) and resolves once it is the current widget
# with its cells loaded.
OPEN_LESSON = """async (path) => {
  const app = window.jupyterapp;
  await app.restored;  // a layout still being restored could bring another tab to the front afterwards
  const widget = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await widget.context.ready;
  app.shell.activateById(widget.id);
  window.posencLesson = widget;  // the notebook the next calls act on
  return widget.context.path;
}"""
# Closes the current notebook and stops its kernel.
CLOSE_LESSON = """async () => {
  const widget = window.posencLesson;
  window.posencLesson = null;
  await widget.sessionContext.shutdown();
  widget.dispose();
}"""


@pytest.mark.xdist_group("lab")
def test_self_check_questions_answer_in_jupyterlab(lab, browser):
    """A student's lesson in JupyterLab renders the chapter's self-check questions as the book does (plain markdown
    and HTML, no extension needed): in every chapter, picking the right option of the first question and a wrong
    option shows "Right." and "Not quite." with their explanations (that every question has the same form:
    tests/test_selfcheck.py; that the book renders every one: tests/test_reading_flow.py)."""
    server, _, _ = lab
    problems = []
    with watched_context(browser, viewport={"width": 1300, "height": 1000}) as watched:
        page = watched.new_page()
        # a workspace of its own, emptied: no tab another test left open comes back in front of the lessons
        page.goto(f"{server.url}/lab/workspaces/selfcheck?reset&token={server.token}")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands.hasCommand('docmanager:open')",
                               timeout=90_000)
        for name in course.assignments():
            expected = selfcheck.questions(course.source_markdown(name).read_text())
            assert page.evaluate(OPEN_LESSON, f"{name}/{name}.ipynb") == f"{name}/{name}.ipynb"
            # JupyterLab renders the cells near the view: bring the first question's cell there
            page.wait_for_function(SCROLL_TO_CELL, arg=f'id="{expected[0].id}"', timeout=60_000)
            page.wait_for_selector(lab_question(expected[0].id), timeout=60_000)
            shown = selfcheck.answer_one_right_and_one_wrong(page, lab_question(expected[0].id),
                                                             [o.right for o in expected[0].options])
            if not (shown["right"].startswith("Right.") and len(shown["right"]) > 20):
                problems.append(f"{name}: the right option shows {shown['right'][:80]!r}")
            if not (shown["wrong"].startswith("Not quite.") and len(shown["wrong"]) > 20):
                problems.append(f"{name}: a wrong option shows {shown['wrong'][:80]!r}")
            page.evaluate(CLOSE_LESSON)
        assert not watched.outside, f"JupyterLab requested addresses off this machine: {watched.outside}"
    assert not problems, "\n".join(problems)


@pytest.mark.xdist_group("lab")
def test_lesson_text_renders_citations_terms_and_equations_in_jupyterlab(lab, browser):
    """JupyterLab renders a lesson's text as a student reads it (book/_ext/lesson_markdown.py): citations as
    author-year labels, glossary terms as words, numbered equations, no MyST role or target left as typed."""
    server, _, _ = lab
    name = EXPLORER
    with watched_context(browser, viewport={"width": 1300, "height": 1000}) as watched:
        page = watched.new_page()
        page.goto(f"{server.url}/lab/tree/{name}/{name}.ipynb?token={server.token}")
        page.wait_for_selector(".jp-Notebook .jp-RenderedMarkdown", timeout=90_000)
        page.wait_for_function("() => document.querySelector('.jp-Notebook .jp-RenderedMarkdown mjx-container')",
                               timeout=60_000)  # MathJax has typeset
        text = page.evaluate("() => [...document.querySelectorAll('.jp-Notebook .jp-RenderedMarkdown')]"
                             ".map(m => m.innerText).join('\\n')")
        tags = page.evaluate("() => document.querySelectorAll('.jp-RenderedMarkdown mjx-container mjx-mtd[id^=\"mjx-eqn\"],"
                             " .jp-RenderedMarkdown mjx-container mjx-labels').length")
        assert not watched.outside, f"JupyterLab requested addresses off this machine: {watched.outside}"
    left = re.findall(r"\{[a-z]+(?::[a-z]+)?\}`[^`]*`|^\([\w.-]+\)=", text, re.M)
    assert not left, f"{name}: MyST shown as typed in JupyterLab: {left[:5]}"
    assert "[Vaswani et al., 2017]" in text, "the chapter's first citation is not rendered as its label"
    assert "permutation equivariance" in text.lower(), "a glossary term's word is missing"
    assert tags, "no numbered equation rendered"
