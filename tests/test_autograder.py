"""The instructor's pipeline: its nbgrader configuration, the grade command's handling of what it is given,
the scan, and (slow) re-grading: manual grades survive, a corrupt resubmission loses nothing.

The synthetic class itself (every chapter, the hostile set) is in test_autograder_class.py.
"""

from __future__ import annotations

import copy
import csv
import os
import subprocess
from types import SimpleNamespace

import nbformat
import nbgrader.api
import nbgrader.preprocessors
import pytest
import sqlalchemy
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde
from traitlets.config.loader import PyFileConfigLoader

import synthetic
from autograder import autograde, checks, config, course, gradebook, preprocessors, report, scan, submissions
from autograder.commands import grade as grade_command
from autograder.ipc_kernel import IpcKernelManager
from autograder.liveness import cell_names, demo_cells_to_skip
from autograder.preprocessors.instructor_tests import setup_imports
from support import run_cli
from synthetic import submit

CHAPTERS = course.assignments()


# ---------------------------------------------------------------------------------------------------------
# The configuration nbgrader loads.

def _config(tmp_path, monkeypatch):
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    return config.load_config()


def test_config_puts_everything_in_the_course_folder(tmp_path, monkeypatch):
    cfg = _config(tmp_path, monkeypatch)
    where = str(tmp_path / "course")
    assert cfg.CourseDirectory.course_id == "posenc"
    assert cfg.CourseDirectory.source_directory == "solutions"
    assert cfg.CourseDirectory.db_url == f"sqlite:///{where}/gradebook.db"
    for step in ("submitted", "autograded", "feedback"):
        assert getattr(cfg.CourseDirectory, f"{step}_directory") == f"{where}/{step}"


def test_root_config_releases_to_lessons():
    """What `nbgrader` itself reads from the repository root (grade only redirects generate's copy)."""
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(course.ROOT)).load_config()
    assert cfg.CourseDirectory.release_directory == "lessons"
    assert cfg.CourseDirectory.source_directory == "solutions"


def test_grading_runs_every_cell_despite_the_books_skip_tag(tmp_path, monkeypatch):
    """Exercise cells carry `skip-execution` for the book; nbclient skips such cells by default, which would
    let every unrun test cell score full points. The step that executes submissions must not skip them."""
    cfg = _config(tmp_path, monkeypatch)
    autograde = Autograde(config=cfg)
    executors = [pp for pp in autograde.autograde_preprocessors if "Execute" in pp.__name__]
    assert len(executors) == 1 and issubclass(executors[0], preprocessors.GuardedExecute), executors
    for cls in executors:
        step = cls(config=cfg)
        assert step.skip_cells_with_tag != "skip-execution"
        assert step.timeout == cfg.Execute.timeout and step.interrupt_on_timeout
    for name in CHAPTERS:
        lesson = nbformat.read(course.lesson_notebook(name), as_version=4)
        tags = {t for c in lesson.cells for t in c.metadata.get("tags", [])}
        assert executors[0](config=cfg).skip_cells_with_tag not in tags, name


def test_the_sandbox_is_chosen_on_the_config_object(tmp_path, monkeypatch):
    """The course's settings sandbox autograde; `--unsandboxed` is a loaded copy whose Execute step starts
    unsandboxed kernels, and the copy alone changes (no environment variable carries the choice)."""
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    sandboxed, unsandboxed = config.load_config(), config.load_config(sandboxed=False)
    assert [preprocessors.GuardedExecute(config=c).sandboxed for c in (sandboxed, unsandboxed)] == [True, False]
    assert type(preprocessors.GuardedExecute(config=unsandboxed, kernel_name="python3").create_kernel_manager()) is IpcKernelManager
    assert [list(c.Autograde.autograde_preprocessors) for c in (sandboxed, unsandboxed)] == \
        [list(config.load_config().Autograde.autograde_preprocessors)] * 2
    assert preprocessors.GuardedExecute(config=config.load_config()).sandboxed


@pytest.mark.slow  # (2 to 4 s: the fast tier stays under a minute)
def test_the_gradebook_waits_for_a_lock_through_its_url(tmp_path, monkeypatch):
    """nbgrader's gradebook is used through its API, unpatched: SQLite's wait for another worker's lock travels in
    the URL grading opens it at, in the course's code (``opened``) and in nbgrader's steps (the API's coursedir,
    whose URL nbgrader hands them); a session changes neither nbgrader nor PATH."""
    cfg = _config(tmp_path, monkeypatch)
    path, engine = os.environ["PATH"], nbgrader.api.create_engine
    with gradebook.session(), gradebook.opened(cfg) as gb:
        waits_ms = gb.db.execute(sqlalchemy.text("PRAGMA busy_timeout")).scalar()
        assert nbgrader.api.create_engine is engine and os.environ["PATH"] == path
    assert waits_ms == gradebook.SQLITE_WAIT * 1000, "SQLite's own 5 s would fail parallel workers' writes"
    url = cfg.CourseDirectory.db_url
    assert gradebook.api(cfg).coursedir.db_url == gradebook.waiting_url(url) != url


@pytest.mark.slow  # (a whole command-line run in a subprocess)
def test_the_command_line_finds_nbgraders_alembic_without_the_virtualenv_activated(tmp_path):
    """nbgrader runs its `alembic` program by name when it creates a gradebook; `python -m autograder` finds it in
    its own environment's bin/ when PATH does not name it (.venv/bin/python run without activating .venv)."""
    result = run_cli("export", course_dir=tmp_path / "course", env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (tmp_path / "course" / "gradebook.db").is_file() and (tmp_path / "course" / "grades.csv").is_file()


def test_config_limits_output_and_restores_deleted_tests(tmp_path, monkeypatch):
    cfg = _config(tmp_path, monkeypatch)
    limit = nbgrader.preprocessors.LimitOutput(config=cfg)
    assert limit.max_lines == 1000 and limit.max_traceback == 100
    assert cfg.OverwriteCells.add_missing_cells is True
    assert cfg.Execute.timeout > 0


def test_timeout_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("POSENC_CELL_TIMEOUT", "7")
    assert _config(tmp_path, monkeypatch).Execute.timeout == 7


def test_limit_output_cuts_a_single_huge_line():
    cell = nbformat.v4.new_code_cell("print('x' * 10**6)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * 10**6 + "\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "y" * 10**6}, execution_count=1),
                    nbformat.v4.new_output("error", ename="E", evalue="z" * 10**6, traceback=["t" * 10**6])]
    cell, _ = preprocessors.InertOutputs().preprocess_cell(cell, {}, 0)  # (after nbgrader's LimitOutput: lines)
    assert len(cell.outputs[0].text) < 20_100 and "Output truncated" in cell.outputs[0].text
    assert len(cell.outputs[1].data["text/plain"]) < 20_100
    assert len(cell.outputs[2].evalue) < 20_100 and len(cell.outputs[2].traceback[0]) < 20_100


def test_course_folders_are_git_ignored():
    for path in ("course/gradebook.db", "course/submitted/s/a/a.ipynb", "course/autograded/s/a/a.ipynb",
                 "course/feedback/s/a/a.html", "course/release/a/a.ipynb", "course/grades.csv"):
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=course.ROOT)
        assert ignored.returncode == 0, f"{path} must be git-ignored"


# ---------------------------------------------------------------------------------------------------------
# What grade accepts and refuses, before nbgrader runs.

def test_find_submissions_reports_each_problem_by_student(tmp_path):
    name = CHAPTERS[0]
    submit(tmp_path, "ok", name)
    submit(tmp_path, "broken", name, text='{"cells": [')
    submit(tmp_path, "notanotebook", name, text='{"hello": 1}')
    submit(tmp_path, "renamed", name, filename="Copy of lesson.ipynb")
    submit(tmp_path, "who", "99_nonsense", text="{}")
    (tmp_path / "bad id!" / name).mkdir(parents=True)
    (tmp_path / "linker" / name).mkdir(parents=True)
    (tmp_path / "linker" / name / f"{name}.ipynb").symlink_to(course.source_notebook(name))
    found, errors = submissions.find_submissions(tmp_path)
    assert [(s.student, s.assignment) for s in found] == [("ok", name)]
    text = "\n".join(errors)
    assert f"broken: {name} not graded: {name}.ipynb is not valid JSON" in text
    assert f"notanotebook: {name} not graded: {name}.ipynb is JSON but not a valid notebook" in text
    assert f"renamed: not graded: {name}/{name}.ipynb is missing; found Copy of lesson.ipynb" in text
    assert "who: 99_nonsense is not an assignment of this course" in text
    assert "bad id!: not graded: a student id must be" in text
    assert f"linker: not graded: the file linker/{name}/{name}.ipynb is a symbolic link" in text
    assert len(errors) == 6


def test_copy_in_leaves_symbolic_links_behind(tmp_path, monkeypatch):
    """A link in a handed-in folder must not bring its target (say, the solutions) into the course folder."""
    name = CHAPTERS[0]
    folder = tmp_path / "in" / "amy" / name
    submit(tmp_path / "in", "amy", name)
    (folder / "answers.ipynb").symlink_to(course.source_notebook(name))
    (folder / "data").symlink_to(course.SOLUTIONS)
    cfg = _config(tmp_path, monkeypatch)
    dest = submissions.copy_in(submissions.Submission("amy", name, folder), cfg)
    assert sorted(p.name for p in dest.iterdir()) == [f"{name}.ipynb"]


def test_grade_goes_on_when_one_assignment_cannot_enter_the_gradebook(tmp_path, monkeypatch):
    """A chapter nbgrader cannot generate costs only that chapter's submissions."""
    if len(CHAPTERS) < 2:
        pytest.skip("needs two chapters")
    first, second = CHAPTERS[:2]
    for name in (first, second):
        submit(tmp_path / "in", "amy", name)
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setattr(gradebook, "sync_assignments", lambda names, cfg: {first: f"{first} is broken"})
    graded = []
    monkeypatch.setattr(autograde, "autograde", lambda pairs, cfg, jobs, progress: graded.extend(pairs) or [])
    monkeypatch.setattr(gradebook, "read_scores", lambda names, cfg: {})
    monkeypatch.setattr(gradebook, "register_students", lambda ids, cfg: None)
    lines = []
    status = grade_command.grade(tmp_path / "in", out=lines.append)
    assert status == 1
    assert graded == [(second, "amy")]
    assert f"ERROR {first} is broken" in lines


def test_score_table_layout():
    name = CHAPTERS[0]
    probs = report.problems(name)
    # autograded problems full, written answers not graded yet (score 0, waiting for a human)
    full = gradebook.Result("amy", name, {p.grade_id: gradebook.Score(p.points if p.kind == "test" else 0.0,
                                                                  p.kind != "test", None)
                                        for p in probs}, ["a note"])
    table = report.format_table(name, [full]).splitlines()
    assert table[0].startswith(name)
    assert all(p.grade_id in table[1] for p in probs)
    autograded = sum(p.points for p in probs if p.kind == "test")
    row = table[2].split()
    assert row[0] == "amy" and f"{autograded:g}" in row and "a note" in table[2]
    assert row.count("-") == sum(p.kind != "test" for p in probs)


# ---------------------------------------------------------------------------------------------------------
# The scan (autograder/scan.py): every way round the block on posenc's reference it must find, and what it
# must not (what changes no verdict now that no test runs in the kernel). Which cells it reads: test_submission_files.

S = scan
WAYS_AROUND = [
    # a second copy of posenc's code, run from its text, a pickle or a name made at run time
    ("exec(open(posenc.attention.__file__).read(), namespace)", S.RUNS),
    ("code = compile(source, 'copy', 'exec')", S.RUNS),
    ("eval(text)", S.RUNS),
    ("import importlib\nimportlib.reload(posenc.attention)", S.RUNS),
    ("from importlib import reload\nreload(posenc.attention)", S.RUNS),
    ("import importlib.util\nspec = importlib.util.spec_from_file_location('copy', path)", S.RUNS),
    ("import runpy\nrunpy.run_path(path)", S.RUNS),
    ("import pkgutil\nsoftmax = pkgutil.resolve_name(name)", S.RUNS),
    ("import pydoc\nmodule = pydoc.locate(name)", S.RUNS),
    ("import pickle\nfunction = pickle.loads(blob)", S.RUNS),
    ("import marshal\ncode = marshal.loads(blob)", S.RUNS),
    ("import timeit\ntimeit.timeit(statement, number=1)", S.RUNS),
    ("import code\ncode.InteractiveInterpreter(namespace).runsource(text)", S.RUNS),
    ("import doctest\ndoctest.run_docstring_examples(holder, namespace)", S.RUNS),
    ("import cProfile\ncProfile.run(text)", S.RUNS),
    ("import site\nsite.addsitedir(folder)", S.RUNS),
    ("array = np.load(buffer, allow_pickle=True)", S.RUNS),
    ("state = torch.load(buffer, weights_only=False)", S.RUNS),
    ("import logging.config\nlogging.config.dictConfig({'()': 'importlib.import_module', 'name': n})", S.RUNS),
    # another process, where nothing is blocked
    ("import subprocess\nsubprocess.run([sys.executable, '-c', text])", S.PROCESS),
    ("import os\nos.system('python copy.py')", S.PROCESS),
    ("import os\npipe = os.popen('python copy.py')", S.PROCESS),
    ("import os\npid = os.fork()", S.PROCESS),
    ("from os import execv", S.PROCESS),
    ("import os\nos.posix_spawn(sys.executable, argv, {})", S.PROCESS),
    ("import multiprocessing\npool = multiprocessing.Pool(1)", S.PROCESS),
    ("from concurrent.futures import ProcessPoolExecutor", S.PROCESS),
    ("import pty\npty.spawn(argv)", S.PROCESS),
    ("import asyncio\nasyncio.run(asyncio.create_subprocess_exec(*argv))", S.PROCESS),
    ("torch.multiprocessing.spawn(worker)", S.PROCESS),
    ("!python -c 'import posenc'", S.PROCESS),
    ("out = !python copy.py", S.PROCESS),
    # a fresh import of posenc, or the block's refusal to import taken away
    ("import sys\nsys.modules.pop('posenc.attention')", S.IMPORTS),
    ("import sys\ndel sys.modules['posenc.attention']", S.IMPORTS),
    ("import sys as s\ns.modules.clear()", S.IMPORTS),
    ("from sys import modules", S.IMPORTS),
    ("import os\nos.sys.modules.clear()", S.IMPORTS),
    ("import sys\nsys.meta_path.pop(0)", S.IMPORTS),
    ("import sys\nsys.meta_path[:] = []", S.IMPORTS),
    ("import sys\nsys.path.insert(0, posenc_folder)", S.IMPORTS),
    ("from sys import path\npath.insert(0, posenc_folder)", S.IMPORTS),
    ("import os\nos.sys.path.append(posenc_folder)", S.IMPORTS),
    ("import sys\nsys.path_hooks.append(hook)", S.IMPORTS),
    ("import sys\nsys.path_importer_cache.clear()", S.IMPORTS),
    # the code the block saved: frames, the garbage collector, raw memory
    ("import gc\nfor thing in gc.get_objects():\n    pass", S.FRAMES),
    ("from gc import get_referrers", S.FRAMES),
    ("import sys\nnames = sys._getframe(2).f_locals", S.FRAMES),
    ("import inspect\nframe = inspect.currentframe().f_back", S.FRAMES),
    ("import inspect\nstack = inspect.stack()", S.FRAMES),
    ("import traceback\nframes = list(traceback.walk_stack(None))", S.FRAMES),
    ("import sys\nframe = sys.exc_info()[2].tb_frame", S.FRAMES),
    ("state = generator.gi_frame.f_locals", S.FRAMES),
    ("import sys\nsys.settrace(tracer)", S.FRAMES),
    ("import threading\nthreading.settrace(tracer)", S.FRAMES),
    ("import sys\nsys.setprofile(profiler)", S.FRAMES),
    ("import logging\nframe = logging.currentframe()", S.FRAMES),
    ("import ctypes\nfunction = ctypes.cast(address, ctypes.py_object).value", S.FRAMES),
    ("memory = np.ctypeslib.as_array(pointer, shape)", S.FRAMES),
    ("memory = open('/proc/self/mem', 'r+b')", S.FRAMES),
    ("import mmap", S.FRAMES),
    # Python's internals: code objects, globals, the builtins
    ("saved = posenc.attention.__code__", S.INTERNALS),
    ("names = softmax.__globals__", S.INTERNALS),
    ("inner = softmax.__closure__[0].cell_contents", S.INTERNALS),
    ("original = softmax.__wrapped__", S.INTERNALS),
    ("import types\nfunction = types.FunctionType(code, namespace)", S.INTERNALS),
    ("from types import CodeType", S.INTERNALS),
    ("__builtins__['exec'](text)", S.INTERNALS),
    ("import builtins\nbuiltins.exec(text)", S.INTERNALS),
    ("run = print.__self__.exec", S.INTERNALS),
    ("classes = ().__class__.__base__.__subclasses__()", S.INTERNALS),
    ("code = softmax.__getattribute__('__code__')", S.INTERNALS),
    ("loader = posenc.attention.__spec__.loader", S.INTERNALS),
    ("module = __import__('posenc.attention')", S.INTERNALS),
    ("code = getattr(softmax, '__code__')", S.INTERNALS),
    ("init = super(Base, Subclass).__init__", S.INTERNALS),  # (any class's __init__, called on any object)
    # a name the scan cannot read: computed, or a namespace as a dict
    ("code = getattr(softmax, '__co' + 'de__')", S.COMPUTED),
    ("value = getattr(module, name)", S.COMPUTED),
    ("import functools\nsoftmax = functools.reduce(getattr, path, root)", S.COMPUTED),
    ("names = vars(posenc.attention)", S.COMPUTED),
    ("run = globals()['__builtins__'].exec", S.COMPUTED),
    ("import operator\ncode = operator.attrgetter(name)(softmax)", S.COMPUTED),
    ("setattr(module, name, decoy)", S.COMPUTED),
    # the grader's agent, which applies the block in the kernel
    ("kernel = get_ipython().kernel", S.AGENT),
    ("import IPython\nshell = IPython.get_ipython()", S.AGENT),
    ("from comm import get_comm_manager", S.AGENT),
    ("manager = shell.kernel.comm_manager", S.AGENT),
    ("import autograder.agent", S.AGENT),
    ("from autograder import checks as c", S.AGENT),
    ("import sys\nagent = sys.modules['autograder.agent']", S.AGENT),
    ("import ipykernel", S.AGENT),
    # a stand-in where the block looks, or the block's own code replaced
    ("checks.blocked = lambda *paths: contextlib.nullcontext()", S.PATCH),
    ("posenc.attention.softmax = decoy", S.PATCH),
    ("del posenc.attention.softmax", S.PATCH),
    ("import posenc.attention as module\nmodule.softmax = decoy", S.PATCH),
    ("module = posenc.attention\nmodule.softmax = decoy", S.PATCH),
    ("setattr(posenc.attention, 'softmax', decoy)", S.PATCH),
    ("def put(target, value):\n    target.softmax = value", S.PATCH),
    ("class Setter:\n    def put(self, value):\n        self.softmax = value\nSetter.put(posenc.attention, decoy)",
     S.PATCH),
    ("class Setter:\n    def __init__(self, value):\n        self = posenc.attention\n        self.softmax = value",
     S.PATCH),  # (on the object __init__ makes, a name posenc defines is fine: not on another one)
    ("class Setter:\n    def __init__(self, value):\n        [setattr(self, 'softmax', value) for self in [module]]",
     S.PATCH),
    ("class Setter:\n    def __init__(self, value):\n        self.put = lambda self: setattr(self, 'softmax', value)",
     S.PATCH),
    ("type(layer).forward = decoy", S.PATCH),
    ("cls = type(layer)\ncls.forward = decoy", S.PATCH),
    ("posenc.LearnedPositionalEmbedding.forward = decoy", S.PATCH),
    ("import sys\nsys.modules['posenc.attention'].softmax = decoy", S.PATCH),
    ("import inspect\ninspect.isclass = lambda thing: True", S.PATCH),
    ("import types\ntypes.FunctionType = object", S.PATCH),
    ("import functools\nfunctools.reduce = fake", S.PATCH),
    ("import builtins\nbuiltins.isinstance = fake", S.PATCH),
    ("import contextlib\ncontextlib.contextmanager = fake", S.PATCH),
    ("def swap(module):\n    module.reduce = fake\nswap(functools)", S.PATCH),
    ("alias = posenc", S.PATCH),
    ("import autograder.wire\nautograder.wire.loads = fake", S.PATCH),
    ("import functools\nfunctools.update_wrapper(posenc.attention, holder)", S.PATCH),
    ("from unittest import mock\nmock.patch.object(posenc.attention, 'softmax', decoy).start()", S.PATCH),
    # posenc's code handed in beside the notebook, or written there
    ("import posenc_copy", S.LOCAL),
    ("from my_attention import softmax", S.LOCAL),
    ("from . import helper", S.LOCAL),
    # magics that run code or programs, and code run through a magic
    ("%run copy.py", S.MAGIC),
    ("%load_ext my_extension", S.MAGIC),
    ("%autoreload 2", S.MAGIC),
    ("%%writefile copy.py\nsoftmax = None", S.MAGIC),
    ("%%bash\npython copy.py", S.MAGIC),
    ("%%script python\nimport posenc", S.MAGIC),
    ("%pip install posenc-copy", S.MAGIC),
    ("%time exec(text)", S.RUNS),
    ("%timeit -n1 -r1 exec(text)", S.RUNS),
    ("%%capture\nimport gc", S.FRAMES),
    ("%timeit -n1 -r1 !python copy.py", S.MAGIC),  # (a shell line after %timeit's options: it runs too)
    (" ip = \uff47\uff45\uff54_\uff49\uff50\uff59\uff54\uff48\uff4f\uff4e()\n x = 1", S.AGENT),  # (NFKC: get_ipython)
    # code the agent runs after the block ends, as it sends the answer
]


@pytest.mark.parametrize("code, reason", WAYS_AROUND, ids=[f"{i}-{c.splitlines()[-1][:40]}" for i, (c, _) in
                                                         enumerate(WAYS_AROUND)])
def test_scan_finds_each_way_around_the_block(code, reason):
    """Each is read as code (not text), gives its reason, and goes in the notes column (AROUND_THE_REFERENCE)."""
    found = [message for _, message in scan.scan_source(code)]
    assert any(message.startswith(reason) for message in found), found
    assert all(scan.TEXT_ONLY not in message for message in found), found
    assert any(message in scan.AROUND_THE_REFERENCE for message in found), found


NO_VERDICT = [  # no test runs in the kernel, and the grader checks values with its own numpy and posenc
    "import numpy\nnumpy.allclose = lambda *args, **kwargs: True",
    "np.allclose = lambda *args, **kwargs: True",
    "import math\nmath.isclose = lambda *args, **kwargs: True",
    "checks = None",
    "posenc = None",
    "import threading\nthreading.Thread(target=f, daemon=True).start()",
    "import asyncio\nasyncio.get_event_loop().call_later(1, f)",  # (it runs between calls: on answered inputs)
    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)",
    "import os\nos._exit(0)",
    "import sys\nsys.exit()",
    "while True:\n    try:\n        pass\n    except KeyboardInterrupt:\n        pass",
    "import atexit\natexit.register(f)",
    # the sandbox's business
    "open('notes.txt', 'w').write(text)",
    "import sqlite3\nsqlite3.connect('../../gradebook.db')",
    "import socket\nsocket.create_connection(('example.org', 80))",
    "import shutil\nshutil.rmtree('/tmp/x')",
]


@pytest.mark.parametrize("code", NO_VERDICT)
def test_scan_is_quiet_on_what_changes_no_verdict(code):
    assert scan.scan_source(code) == []


@pytest.mark.parametrize("kind", sorted(synthetic.PATCHES))
def test_a_patch_of_numpy_is_no_finding_and_one_of_posenc_is(kind):
    """The hostile class's monkeypatches: numpy's and math's change nothing; posenc's rebinds every name the block
    looks up."""
    found = [message for _, message in scan.scan_source(synthetic.PATCHES[kind])]
    if kind == "patch_posenc":
        assert any(message in scan.AROUND_THE_REFERENCE for message in found), found
    else:
        assert found == [], found


def test_the_names_the_block_looks_up_are_posencs_and_the_agents():
    names = scan.block_names()
    assert {"softmax", "LearnedPositionalEmbedding", "forward", "blocked", "reply", "loads"} <= names
    assert not {"table", "max_len"} & names  # (what the model solutions' modules store on self)


@pytest.mark.parametrize("name", CHAPTERS)
def test_scan_is_quiet_on_the_reference_solutions(name):
    """The source solutions, typed in by a student, raise no finding but uses of posenc (no false alarms)."""
    a = synthetic.Assignment.load(name)
    for sid, source in a.solution_source.items():
        found = [m for _, m in scan.scan_source(synthetic.strip_markers(source))]
        assert all(m == scan.USES_POSENC for m in found), f"{name}/{sid}: {found}"


# ---------------------------------------------------------------------------------------------------------
# Re-grading (slow): manual grades survive, a corrupt resubmission loses nothing, jobs=1 gives the scores.

REGRADE = [n for n in ("01_why_position", "02_sinusoidal") if n in CHAPTERS] or CHAPTERS[:2]


def _grades(course_dir):
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", "posenc") as gb:
        return {(s.student.id, a.name): {g.name: SimpleNamespace(score=g.score, auto_score=g.auto_score,
                                                                 manual_score=g.manual_score,
                                                                 needs_manual_grade=g.needs_manual_grade)
                                         for nb in s.notebooks for g in nb.grades}
                for a in gb.assignments for s in a.submissions}


@pytest.mark.slow
@pytest.mark.xdist_group("autograder_regrade")
def test_regrading_keeps_manual_grades_and_survives_a_corrupt_resubmission(tmp_path):
    one, two = REGRADE
    course_dir = tmp_path / "course"
    b1, b2 = synthetic.Builder(one), synthetic.Builder(two)
    perfect, partial, late = b1.perfect(), b2.partial(), b2.perfect("late")
    for s in (perfect, partial, late):
        s.write(tmp_path / "round1")
    first = run_cli("grade", tmp_path / "round1", "--jobs", "1", course_dir=course_dir)
    assert first.returncode == 0, first.stdout + first.stderr
    grades = _grades(course_dir)
    for s in (perfect, partial, late):
        assert {k: g.score for k, g in grades[(s.student, s.assignment)].items()} == s.expected

    # A grader enters marks in formgrader (here through nbgrader's gradebook API): the written answer,
    # and an override of an autograded test.
    written = b1.a.written[0]
    override = b1.a.test_ids()[-1]
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", "posenc") as gb:
        gb.find_grade(written, one, one, "perfect").manual_score = 1.5
        gb.find_grade(override, one, one, "perfect").manual_score = 0.5
        gb.find_comment(written, one, one, "perfect").manual_comment = "good, but say why"
        gb.db.commit()

    # Round 2: the same perfect notebook is graded again; `late` resubmits a corrupt file.
    perfect.write(tmp_path / "round2")
    synthetic.Builder(two).corrupt("late").write(tmp_path / "round2")
    second = run_cli("grade", tmp_path / "round2", "--jobs", "1", course_dir=course_dir)
    assert second.returncode == 1
    assert f"ERROR late: {two} not graded: {two}.ipynb is not valid JSON" in second.stdout
    grades = _grades(course_dir)
    again = grades[("perfect", one)]
    assert again[written].manual_score == 1.5 and again[written].score == 1.5
    assert again[override].manual_score == 0.5 and again[override].score == 0.5
    assert again[override].auto_score == b1.a.points[override]  # autograde ran again underneath
    assert again[override].needs_manual_grade  # nbgrader flags an overridden grade for review
    for tid in b1.a.test_ids()[:-1]:
        assert again[tid].score == perfect.expected[tid]
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", "posenc") as gb:
        assert gb.find_comment(written, one, one, "perfect").manual_comment == "good, but say why"
    # Nothing of `late` was lost: the first submission's grades and files are still there.
    assert {k: g.score for k, g in grades[("late", two)].items()} == late.expected
    kept = course_dir / "submitted" / "late" / two / f"{two}.ipynb"
    assert submissions.notebook_problem(kept) is None

    # The export reflects the manual grades.
    target = tmp_path / "grades.csv"
    assert run_cli("export", "--to", target, course_dir=course_dir).returncode == 0
    with open(target, newline="") as f:
        rows = {(r["student_id"], r["assignment"]): float(r["score"]) for r in csv.DictReader(f)}
    expected = sum(perfect.expected.values()) - perfect.expected[override] + 0.5 + 1.5
    assert rows[("perfect", one)] == pytest.approx(expected)


def test_setup_imports_are_what_the_grader_runs_before_each_test():
    setup = "import numpy as np\nimport posenc\nfrom autograder import checks\nfrom . import local\nx = 1\n"
    assert setup_imports([setup, "import numpy as np\nimport math"]) == [
        "import numpy as np", "import posenc", "from autograder import checks", "import math"]
    assert setup_imports(["def broken(:"]) == []


def test_metadata_problems_name_the_cell(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("rubric"), nbformat.v4.new_code_cell("pass"),
                nbformat.v4.new_code_cell("pass")]
    nb.cells[0].metadata["nbgrader"] = {"grade_id": "rubric", "task": True, "locked": True, "grade": False,
                                        "solution": False, "schema_version": 3}
    for cell in nb.cells[1:]:
        cell.metadata["nbgrader"] = {"grade_id": "twice", "grade": True, "points": 1, "locked": True,
                                     "solution": False, "task": False, "schema_version": 3}
    (tmp_path / "x").mkdir()
    nbformat.write(nb, tmp_path / "x" / "x.ipynb")
    monkeypatch.setattr(course, "source_notebook", lambda name: tmp_path / name / f"{name}.ipynb")
    problems = gradebook.metadata_problems("x")
    assert "cell 0 (rubric) is a task cell without points" in problems[0]
    assert len(problems) == 1, "a grade_id used twice is nbgrader's own 'Duplicate grade id' (through last_error)"


def _metadata_cases():
    """A lesson's cells, each alone, with every kind of nbgrader metadata, correct and broken."""
    lesson = nbformat.read(course.lesson_notebook(CHAPTERS[0]), as_version=4)
    test = next(c for c in lesson.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
                and not c.metadata["nbgrader"].get("solution"))
    edits = {"as released": {}, "points not a number": {"points": "two"}, "grade not a bool": {"grade": "yes"},
             "grade_id not a string": {"grade_id": 5}, "empty grade_id": {"grade_id": ""},
             "older schema": {"schema_version": 2}, "newer schema": {"schema_version": 4},
             "no schema version": {"schema_version": None}, "no grade_id": {"grade_id": None},
             "no points": {"points": None}, "a task that is code": {"task": True},
             "unknown key": {"colour": "red"}, "locked not a bool": {"locked": 1}}
    cases = {}
    for what, edit in edits.items():
        cell = copy.deepcopy(test)
        for key, value in edit.items():
            if value is None:
                cell.metadata["nbgrader"].pop(key, None)
            else:
                cell.metadata["nbgrader"][key] = value
        cases[what] = cell
    markdown = nbformat.v4.new_markdown_cell("answer")
    markdown.metadata["nbgrader"] = {**test.metadata["nbgrader"], "solution": False}
    cases["a graded markdown cell that is not a solution"] = markdown
    cases["no nbgrader metadata"] = lesson.cells[0]
    return cases


def test_autograde_checks_metadata_with_nbgraders_step(tmp_path, monkeypatch):
    from nbgrader.preprocessors import CheckCellMetadata

    autograde = Autograde(config=_config(tmp_path, monkeypatch))
    for steps in (autograde.sanitize_preprocessors, autograde.autograde_preprocessors):
        assert CheckCellMetadata in steps, steps


@pytest.mark.parametrize("what", sorted(_metadata_cases()))
def test_broken_cell_metadata_fails_the_check(what):
    nb = nbformat.v4.new_notebook(cells=[_metadata_cases()[what]])
    if what in ("as released", "no nbgrader metadata"):
        nbgrader.preprocessors.CheckCellMetadata().preprocess(nb, {})
    else:
        with pytest.raises(Exception):  # (nbgrader's ValidationError, or its schema too old or too new)
            nbgrader.preprocessors.CheckCellMetadata().preprocess(nb, {})


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_chapter_can_enter_the_gradebook(name):
    """What nbgrader generate_assignment needs beyond what `nbgrader validate` checks."""
    assert not gradebook.metadata_problems(name), gradebook.metadata_problems(name)


# ---------------------------------------------------------------------------------------------------------
# Demo cells: which narrative cells grading may leave out (autograder/liveness.py).

def test_cell_names_worked_examples():
    binds, kills, reads = cell_names("d = 128\nfig, ax = plt.subplots()\nax.plot([i * d for i in range(3)])\n")
    assert kills == {"d", "fig", "ax"} and binds == kills
    assert reads == {"plt", "range"}, "d is rebound before it is read; i belongs to the comprehension"
    _, kills, reads = cell_names("def f(x, k=base):\n    y = x + g\n    return y\n")
    assert kills == {"f"} and reads == {"base", "g"}, "parameters and locals are not globals"
    binds, kills, reads = cell_names("for j in range(n):\n    w = j + 1\n    h(lambda t, w=w: t)\nprint(w)\n")
    assert {"j", "w"} <= binds and not kills & {"j", "w"}, "a loop may not run: its names are not rebound"
    assert reads == {"range", "n", "h", "print", "w"}, "w is read after the loop, maybe from before the cell"
    _, kills, reads = cell_names("if c:\n    q = 1\nprint(q)\nwith open(p) as fh:\n    t = fh.read()\nprint(t)\n")
    assert "q" in reads and "q" not in kills and {"fh", "t"} <= kills and "t" not in reads
    assert cell_names("%matplotlib inline\nx = y")[2] >= {"get_ipython", "y"}, "magics are translated"
    assert cell_names("In [1]: x = 1")[0] == {"x"}, "IPython strips a pasted prompt, though the line is Python"
    assert cell_names("def broken(:\n") is None


@pytest.mark.parametrize("student", [
    "f = lambda a=a: a",  # a default is read where the lambda is made, though it shares the parameter's name
    "v = [a for a in a]",  # a comprehension's first iterable is read in the enclosing scope
    "class C:\n    a = a\n",  # a class body reads a name from the globals before binding it
    "def f():\n    global a\n    a = a + 1\n",  # a global statement makes the function's a the notebook's
    "def f(b: a):\n    return b\n",  # an annotation is read where the function is made
    "a += 1",  # an augmented assignment reads its target first
    "def f():\n    global a\n    a -= 1\n",  # ... also through a global statement
])
def test_a_demo_cell_whose_name_a_student_reads_in_a_nested_scope_still_runs(student):
    """Leaving the demo cell out would fail the student's cell with a NameError the lesson never shows."""
    assert "a" in cell_names(student)[2]
    nb = _nb(("a = 3", ["demo"], None), (student, [], {"solution": True, "grade_id": "s", "locked": False}))
    assert demo_cells_to_skip(nb) == set()


def test_a_demo_cell_binding_a_name_through_a_global_statement_runs():
    """A function's global statement binds the notebook's name when the cell calls it."""
    nb = _nb(("def setup():\n    global a\n    a = 3\nsetup()", ["demo"], None),
             ("print(a)", [], {"solution": True, "grade_id": "s", "locked": False}))
    assert demo_cells_to_skip(nb) == set()


def test_a_comprehensions_variable_is_no_kill():
    """A comprehension's variable is its own, though Python 3.12 lists it in the cell's symbol table (PEP 709):
    a demo cell binding the same name still runs for a later cell that reads it."""
    for source in ("ys = [0 for n in r]", "with open({n: 1 for n in r}) as f:\n    pass",
                   "def f(k=[n for n, _ in r]):\n    pass", "zs = {(n, m) for n, m in r}"):
        assert "n" not in cell_names(source)[1], source
    assert "m" not in cell_names("m = 0\nys = [m for m in ms]\nprint(m)")[2], "m = 0 rebinds m, wherever else m is"
    nb = _nb(("n = 10", ["demo"], None), ("ys = [0 for n in range(3)]", [], None),
             ("print(n)", [], {"solution": True, "grade_id": "s", "locked": False}))
    assert demo_cells_to_skip(nb) == set()


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    for source, tags, meta in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata = {"tags": list(tags), **({"nbgrader": meta} if meta else {})}
        nb.cells.append(cell)
    return nb


def test_demo_cells_run_only_when_a_later_cell_reads_what_they_define():
    locked = {"locked": True, "grade": False, "solution": False, "grade_id": "setup"}
    test = {"grade": True, "locked": True, "solution": False, "grade_id": "t", "points": 1}
    solution = {"solution": True, "grade": False, "locked": False, "grade_id": "s"}
    nb = _nb(("import numpy as np", [], locked),
             ("base = 10.0\nplt.plot([base])", ["demo"], None),       # 1: read by the solution below
             ("d = 4\nprint(d)", ["demo"], None),                     # 2: d rebound by 3 before anyone reads it
             ("d = 8\nglue('d', d)", ["demo"], None),                 # 3: read by the test
             ("fig = plt.figure()", ["demo"], None),                  # 4: nobody reads fig
             ("x = base ** 2", [], solution),
             ("assert x == 100 and d == 8", [], test),
             ("fig.savefig('f.png')", [], None))                      # 7: not a demo: runs, and needs 4
    assert demo_cells_to_skip(nb) == {2}
    nb.cells[7].metadata["tags"] = ["demo"]
    assert demo_cells_to_skip(nb) == {2, 4, 7}
    nb.cells[6].metadata["tags"] = ["demo"]                           # a student tags a test cell: it still runs
    assert demo_cells_to_skip(nb) == {2, 4, 7}
    nb.cells[5].source = "x = base ** 2 +"                            # unparseable: every earlier cell runs
    assert demo_cells_to_skip(nb) == {7}
