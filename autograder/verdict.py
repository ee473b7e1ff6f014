"""Test cells decided in the grading process, from values, never from what the student's kernel reports.

While autograding, a test cell never runs in the student's kernel: the kernel has run the student's code, and an
input transformer, an exception handler or a display hook registered there could make any cell run there look
passed. ``judge`` runs the cell here, from the instructor's source (visible, then hidden tests):

* the setup cell's imports are the grader's own numpy and posenc, and ``checks`` is a ``checks.Checks`` bound
  to this cell's ``checks.Grading`` context;
* each name the test reads from the notebook (the student's functions, classes and answer variables) is a
  stand-in: a value the kernel sent as data, or ``RemoteFunction``, which sends its arguments to the kernel
  (``autograder.agent``), calls the student's function there, and returns the value it got back
  (``autograder.wire``: data only);
* functions the test marks ``@checks.kernel`` are shipped to the kernel as source and run there;
* references that the test blocks with ``checks.without`` are blocked in the kernel during the call;
* hidden tests draw their cases from ``checks.rng`` salted per submission.

Every assertion, every comparison and every reference value is computed here. A cell passes when its source
runs to the end without an exception; the kernel can only influence the values it returns for inputs it
sees at grading time. What the cell prints is kept: ``judge`` returns it with the ``Verdict``, and
``autograder.preprocessors.GuardedExecute`` makes both the cell's outputs, which nbgrader scores.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import contextlib
import hmac
import io
import json
import os
import signal
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

from . import checks, wire
from .liveness import cell_names

BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
VISIBLE, HIDDEN = "<visible tests>", "<hidden tests>"  # the file names of their compiled code


class StudentError(Exception):
    """The student's code raised an exception of a type that is not a Python built-in (or a control one)."""


class ChannelFailure(BaseException):
    """The kernel did not answer a call as the protocol requires (no reply, an unreadable one, too late).
    A BaseException, so that a test's ``except Exception`` (written for the student's own errors) cannot
    take it for an answer: it always ends the test cell, failed."""


class KernelLost(ChannelFailure):
    """The kernel died or ignored the interrupt: later cells cannot run either."""


class GraderTimeout(ChannelFailure):
    """The grader's own work on the values the kernel sent (decoding, comparing) outlasted the cell's time."""


WATCH_GRACE = 1.0  # seconds the grader's timer waits past the channel's deadline (which governs waiting); at most
#                   the cell's own time again


def _critical(frame) -> bool:
    """Whether ``frame`` or a frame that called it is one an exception must not interrupt: an import (a module
    left half-imported would break every later submission)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


class _Watch:
    """The deadline of the grader's own work on one test cell (``judge``'s ``seconds``), enforced with an
    interval timer in the main thread. While a request waits for the kernel, the channel's own deadline
    governs (it interrupts the kernel properly); the timer only marks the time as spent, and the request
    raises when it returns. Elsewhere, the timer raises ``GraderTimeout`` where the grader's code is."""

    def __init__(self, seconds: float | None):
        self.seconds, self.busy, self.expired, self.done = seconds, False, False, False

    def _ring(self, signum, frame):
        if self.done:  # (rang while the timer was being stopped)
            return
        self.expired = True
        if _critical(frame):  # never inside an import or a block's set-up: try again a moment later
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            return
        if not self.busy:
            raise GraderTimeout(f"the grader's checks of the values the notebook returned took longer than the "
                                f"{self.seconds:g} s this test cell gets (values built to be slow to decode "
                                "or compare?)")

    @contextlib.contextmanager
    def running(self):
        usable = (self.seconds is not None and hasattr(signal, "setitimer")
                  and threading.current_thread() is threading.main_thread())
        if not usable:  # (not the main thread: only the channel's deadline applies)
            yield self
            return
        previous = signal.signal(signal.SIGALRM, self._ring)
        signal.setitimer(signal.ITIMER_REAL, max(self.seconds, 0.01))
        try:
            yield self
        finally:
            self.done = True
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    @contextlib.contextmanager
    def waiting(self):
        """Around one request to the kernel: the timer does not raise inside it, but after it."""
        self.busy = True
        try:
            yield
        finally:
            self.busy = False
        if self.expired:
            raise GraderTimeout(f"the test cell used up its {self.seconds:g} s")


@dataclass
class Verdict:
    passed: bool
    stage: str = ""  # where it failed: "visible" or "hidden"
    ename: str = ""
    message: str = ""
    lost: bool = False  # the kernel is gone: later cells cannot run
    printed: str = ""  # what the cell's tests printed (and warned), in order
    line: int | None = None  # the line of the visible tests that failed (never one of the hidden tests)


def split_hidden(source: str) -> tuple[str, str]:
    """(visible tests, hidden tests): the lines outside and inside the BEGIN/END HIDDEN TESTS markers."""
    visible, hidden, inside = [], [], False
    for line in source.splitlines():
        if BEGIN_HIDDEN in line:
            inside = True
        elif END_HIDDEN in line:
            inside = False
        else:
            (hidden if inside else visible).append(line)
    return "\n".join(visible) + "\n", "\n".join(hidden) + "\n"


def _is_kernel_decorator(node) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "kernel" and isinstance(node.value, ast.Name)
            and node.value.id == "checks")


def kernel_functions(source: str) -> dict[str, str]:
    """{name: source to run in the kernel} of the functions a test cell marks ``@checks.kernel``: the
    function without its decorator, after the cell's other top-level functions it calls (transitively), so
    that a builder shared by the kernel side and the checks is written once."""
    tree = ast.parse(source)
    plain, marked = {}, {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            if any(_is_kernel_decorator(d) for d in node.decorator_list):
                marked[node.name] = node
            else:
                plain[node.name] = node
    for node in ast.walk(tree):  # marked functions nested in loops or other functions
        if isinstance(node, ast.FunctionDef) and any(_is_kernel_decorator(d) for d in node.decorator_list):
            marked.setdefault(node.name, node)

    def needs(node, seen):
        for name in sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}):
            if name in plain and name not in seen:
                seen.append(name)
                needs(plain[name], seen)
        return seen

    found = {}
    for name, node in marked.items():
        bare = ast.FunctionDef(**{**{f: getattr(node, f) for f in node._fields}, "decorator_list": []})
        helpers = [ast.unparse(plain[h]) for h in reversed(needs(node, []))]
        found[name] = "\n\n".join(helpers + [ast.unparse(ast.fix_missing_locations(bare))])
    return found


def notebook_names(source: str, setup: list[str]) -> list[str]:
    """The names a test cell reads from the notebook: not bound by the cell, the setup imports or Python,
    and not read only inside ``@checks.kernel`` functions (those run in the kernel, where they are defined)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(_is_kernel_decorator(d) for d in node.decorator_list):
            node.body = [ast.Pass()]
    names = cell_names(ast.unparse(tree))
    imported = set()
    for line in setup:
        imported |= cell_names(line)[0]
    if names is None:
        return []
    binds, _, reads = names
    return sorted(reads - imported - set(dir(builtins)))


def submission_digest(nb, folder) -> str:
    """A digest of everything the student's kernel can read of a submission: the notebook as it runs (every
    cell's source, metadata and outputs, and its own metadata) and every file of its folder (names and
    bytes; links by their target's name, never followed)."""
    digest = hashlib.sha256(json.dumps(nb, sort_keys=True, default=str).encode())
    root = Path(folder) if folder else None
    if root is not None and root.is_dir():
        for path in sorted(root.rglob("*")):
            digest.update(b"\0" + str(path.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
            if path.is_symlink():
                digest.update(b"link:" + os.fsencode(os.readlink(path)))
            elif path.is_file():
                try:
                    with open(path, "rb") as handle:
                        for block in iter(lambda: handle.read(1 << 20), b""):
                            digest.update(block)
                except OSError as exc:  # unreadable: its name and the reason still count
                    digest.update(f"unreadable: {exc.errno}".encode())
    return digest.hexdigest()


def salt_for(secret: bytes, student: str, assignment: str, grade_id: str, content: str = "") -> int:
    """The salt of a test cell's hidden cases: secret to the grader, and fixed by the student, the chapter,
    the cell and ``content`` (``submission_digest``: the notebook and every file beside it): re-grading the
    same submission repeats the cases, and any change to it (a file of recorded answers beside the notebook
    included) gets new ones, so cases a notebook recorded and printed while it was graded are no use to the
    next version of it."""
    key = f"{student}\0{assignment}\0{grade_id}\0{content}".encode()
    return int.from_bytes(hmac.new(secret, key, hashlib.sha256).digest()[:8], "big")


_SAFE_ERRORS = {name for name in dir(builtins) if isinstance(getattr(builtins, name), type)
                and issubclass(getattr(builtins, name), Exception)}


def _student_exception(reply: dict) -> Exception:
    """The student's exception, rebuilt: a Python built-in type when it was one, else StudentError."""
    name, message = str(reply.get("type", "Exception")), str(reply.get("message", ""))
    if reply.get("module") == "builtins" and name in _SAFE_ERRORS:
        return getattr(builtins, name)(message)
    return StudentError(f"{name}: {message}")


STORE_FROM = 20_000  # characters of wire JSON from which an argument is sent once and then by key


class Channel:
    """What the grading process needs from the student's kernel: send a request, get the reply text.
    ``stored`` mirrors the large arguments the kernel keeps (wire.Stored), oldest first; ``watch`` is the
    deadline of the test cell being judged (set by ``judge``)."""

    stored: dict | None = None
    watch: _Watch | None = None

    def request(self, payload: str) -> str:  # pragma: no cover - an interface
        raise NotImplementedError

    def pack(self, value):
        """``value``, or a wire.Stored standing for it when it is large (by key alone if sent before)."""
        tree = wire.encode(value)
        text = json.dumps(tree)
        if len(text) < STORE_FROM:
            return wire.Encoded(tree)  # (encoded once, not again with the request)
        if self.stored is None:
            self.stored = {}
        key = hashlib.sha256(text.encode()).hexdigest()
        if key in self.stored:
            return wire.Stored(key, None)
        self.stored[key] = True
        while len(self.stored) > wire.STORED:
            self.stored.pop(next(iter(self.stored)))
        return wire.Stored(key, text)



def ask(channel: Channel, request: dict):
    """Send one request through ``channel`` and return the value the student's code produced (or raise its
    exception). A reply that is not a well-formed reply is a ChannelFailure."""
    with channel.watch.waiting() if channel.watch is not None else contextlib.nullcontext():
        text = channel.request(wire.dumps(request))
    try:
        reply = wire.loads(text)
    except wire.WireError as exc:
        raise ChannelFailure(f"the notebook's answer could not be read: {exc}") from None
    if not isinstance(reply, dict) or "ok" not in reply:
        raise ChannelFailure("the notebook's answer could not be read: not a reply")
    if reply["ok"] is True:
        return reply.get("value")
    raise _student_exception(reply)


class RemoteFunction:
    """Stands for the notebook's function or class ``name``: a call runs it in the student's kernel."""

    def __init__(self, channel: Channel, grading: checks.Grading, name: str, source: str | None = None):
        self._channel, self._grading, self.__name__, self._source = channel, grading, name, source

    def _ask(self, op: str, **fields):
        """One request about this function (the blocks open now go along, and the source of a test-cell
        function), answered by the student's kernel."""
        request = {"op": op, "name": self.__name__, **fields, "blocked": self._grading.blocked_now()}
        if self._source:
            request["source"] = self._source
        return ask(self._channel, request)

    def __call__(self, *args, **kwargs):
        pack = self._channel.pack
        return self._ask("run" if self._source else "call", args=[pack(a) for a in args],
                         kwargs={k: pack(v) for k, v in kwargs.items()})

    def each(self, cases: list[tuple]) -> list:
        """``[self(*case) for case in cases]`` in one request (``checks.each``): a list of as many results
        (in more requests when their results would not fit in one reply). An argument that several cases share
        (the same object) is encoded once."""
        packed = {}

        def pack(value):
            if id(value) not in packed:
                packed[id(value)] = (value, self._channel.pack(value))  # (value kept: its id stays its own)
            return packed[id(value)][1]
        values = []
        while len(values) < len(cases):  # the kernel answers for the first cases when all would not fit
            left = cases[len(values):]
            got = self._ask("each", cases=[[pack(a) for a in case] for case in left])
            if not isinstance(got, list) or not 0 < len(got) <= len(left):
                raise ChannelFailure(f"the notebook's answer to {len(left)} calls of {self.__name__} could not "
                                     "be read: not a list of results, one per call")
            values += got
        return values

    def __repr__(self):
        return f"<the notebook's {self.__name__}>"


def _each(function, cases: list[tuple]) -> list:
    """checks.each while grading: the notebook's functions get every case in one request."""
    if isinstance(function, RemoteFunction):
        return function.each(cases)
    return [function(*case) for case in cases]


class HiddenKernelFunction(Exception):
    """A hidden test marks a function ``@checks.kernel``: its code would be sent to the student's kernel,
    which could read it and answer for it. Hidden tests call the notebook's functions (checks.each) and
    check the values here."""


def _shipped(channel: Channel, grading: checks.Grading, shipped: dict, function) -> RemoteFunction:
    if function.__name__ not in shipped:
        raise HiddenKernelFunction(f"{function.__name__} is marked @checks.kernel inside the hidden tests; "
                                   "only visible tests may run code in the student's kernel")
    return RemoteFunction(channel, grading, function.__name__, shipped[function.__name__])


@dataclass(frozen=True)
class _Prepared:
    """What judge needs of a test cell before it asks the kernel anything: the same for every submission."""
    setup: object  # code objects
    visible: object
    hidden: object
    shipped: dict
    names: tuple


@functools.lru_cache(maxsize=256)
def _prepare(source: str, setup: tuple[str, ...]) -> _Prepared:
    """A test cell parsed and compiled once per grading process (its source is the instructor's, from the
    gradebook, so a class has a few dozen of them), not once per submission."""
    visible, hidden = split_hidden(source)
    return _Prepared(compile("\n".join(setup) + "\n", "<setup imports>", "exec"),
                     compile(visible, VISIBLE, "exec"), compile(hidden, HIDDEN, "exec"),
                     kernel_functions(visible),  # (never the hidden tests' code: the kernel is the student's)
                     tuple(notebook_names(source, list(setup))))


def _failed_line(exc: BaseException) -> int | None:
    """The line of the visible tests where ``exc`` was raised (the innermost frame of their code), or None."""
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == VISIBLE:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line



def judge(source: str, setup: list[str], channel: Channel, salt: int | None,
          seconds: float | None = None) -> Verdict:
    """Run a test cell's visible then hidden tests in this process against the student's kernel, in at most
    ``seconds`` (the kernel's time and the grader's own: decoding and comparing what the kernel sent); past
    them the cell fails, saying so. None: no limit of the grader's own (the channel's deadline still holds).
    What the visible tests print (and warn) comes back in the verdict; what the hidden ones print is dropped (it
    could show their cases)."""
    try:
        prepared = _prepare(source, tuple(setup))
    except SyntaxError as exc:  # (the instructor's source: `make lessons` and the tests catch this first)
        return Verdict(False, "visible", "SyntaxError", str(exc))
    shipped = prepared.shipped
    grading = checks.Grading(ship=lambda fn: _shipped(channel, grading, shipped, fn), each=_each)
    namespace = {"__name__": "__grader__", "__builtins__": builtins}
    exec(prepared.setup, namespace)
    if "checks" in namespace:
        namespace["checks"] = checks.Checks(grading)
    stage, printed, shown = "visible", io.StringIO(), None
    watch = channel.watch = _Watch(None if seconds is None else seconds + min(WATCH_GRACE, seconds))
    try:
        with watch.running(), contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), \
                warnings.catch_warnings():
            warnings.simplefilter("always")  # (each warning printed where it happens, as in a notebook)
            names = list(prepared.names)
            described = ask(channel, {"op": "describe", "names": names}) if names else {}
            if not isinstance(described, dict):
                raise ChannelFailure("the notebook's answer could not be read: not a description")
            for name in names:
                entry = described.get(name)
                kind = entry.get("kind") if isinstance(entry, dict) else None
                if kind == "data":
                    namespace[name] = entry.get("value")
                elif kind == "callable":
                    namespace[name] = RemoteFunction(channel, grading, name)
            exec(prepared.visible, namespace)
            stage, shown = "hidden", printed.getvalue()
            grading.salt = salt
            exec(prepared.hidden, namespace)
    except KernelLost as exc:
        decided = Verdict(False, stage, "KernelLost", str(exc), lost=True)
    except GraderTimeout as exc:
        decided = Verdict(False, stage, "GraderTimeout", str(exc))
    except ChannelFailure as exc:
        decided = Verdict(False, stage, "NoAnswer", str(exc))
    except Exception as exc:
        decided = Verdict(False, stage, type(exc).__name__, str(exc), line=_failed_line(exc))
    else:
        decided = Verdict(True)
    finally:
        channel.watch = None
    decided.printed = printed.getvalue() if shown is None else shown
    return decided
