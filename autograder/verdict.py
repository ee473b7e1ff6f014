"""How a test cell is decided while autograding: the instructor's cell run in the grading process on the values
the student's kernel returns (autograder/README.md, "Test cells run only in the grading process")."""

from __future__ import annotations

import ast
import builtins
import contextlib
import hashlib
import hmac
import io
import json
import os
import signal
import threading
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

from . import checks, wire
from .liveness import cell_names

BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
VISIBLE, HIDDEN = "<visible tests>", "<hidden tests>"  # the file names of their compiled code


class StudentError(Exception):
    """The student's code raised an exception whose type is not one of Python's built-in ones."""


class ChannelFailure(BaseException):
    """The kernel did not answer as the protocol requires (no reply, an unreadable one, too late). A
    BaseException, so that a test's ``except Exception`` cannot take it for an answer."""


class KernelLost(ChannelFailure):
    """The kernel died or ignored the interrupt: later cells cannot run either."""


class GraderTimeout(ChannelFailure):
    """The test cell's time ran out in the grader's own work (decoding, comparing the kernel's values)."""


@contextlib.contextmanager
def _watch(seconds: float | None):
    """GraderTimeout once ``seconds`` (and up to 1 s of grace; None: never) have passed, raised in the grader's own
    code: inside an import or ``Channel.send`` (the channel has its own deadline) the timer rings again shortly."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    seconds, done = seconds + min(1.0, seconds), False

    def ring(signum, frame):
        if done:  # (rang while the timer was being stopped)
            return
        codes = [f.f_code for f, _ in traceback.walk_stack(frame)]
        if Channel.send.__code__ in codes or any(c.co_filename.startswith("<frozen importlib") for c in codes):
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            return
        raise GraderTimeout(f"the grader's checks of the values the notebook returned took longer than the "
                            f"{seconds:g} s this test cell gets (values built to be slow to decode or compare?)")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01))
    try:
        yield
    finally:
        done = True
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Verdict:
    passed: bool
    stage: str = ""  # where it failed: "visible" or "hidden"
    ename: str = ""
    message: str = ""
    lost: bool = False  # the kernel is gone: later cells cannot run
    printed: str = ""  # what the cell's visible tests printed (and warned), in order
    line: int | None = None  # the line of the visible tests that failed (never one of the hidden tests)


def split_hidden(source: str) -> tuple[str, str]:
    """(visible tests, hidden tests): the lines outside and inside the BEGIN/END HIDDEN TESTS markers."""
    parts, inside = ([], []), False
    for line in source.splitlines():
        if BEGIN_HIDDEN in line or END_HIDDEN in line:
            inside = BEGIN_HIDDEN in line
        else:
            parts[inside].append(line)
    return "\n".join(parts[0]) + "\n", "\n".join(parts[1]) + "\n"


def _marked(node) -> bool:
    """Whether ``node`` is a function marked ``@checks.kernel``."""
    return isinstance(node, ast.FunctionDef) and any(ast.unparse(d) == "checks.kernel" for d in node.decorator_list)


def kernel_functions(source: str) -> dict[str, str]:
    """{name: source to run in the kernel} of the functions a test cell marks ``@checks.kernel`` (at any depth):
    each undecorated, after the cell's top-level functions it calls (transitively), in the cell's order."""
    tree = ast.parse(source)
    plain = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef) and not _marked(node)}
    found = {}
    for node in ast.walk(tree):
        if _marked(node) and node.name not in found:
            node.decorator_list, needed, todo = [], set(), [node]
            while todo:
                called = {n.id for n in ast.walk(todo.pop()) if isinstance(n, ast.Name)} & plain.keys() - needed
                needed |= called
                todo += [plain[name] for name in called]
            found[node.name] = "\n\n".join([ast.unparse(f) for name, f in plain.items() if name in needed]
                                           + [ast.unparse(node)])
    return found


def notebook_names(source: str, bound) -> list[str]:
    """The names a test cell reads from the notebook: not bound by the cell first, in ``bound`` (the setup's
    namespace) or by Python, nor read only inside ``@checks.kernel`` functions (they run in the kernel)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if _marked(node):
            node.body = [ast.Pass()]
    return sorted(n for n in cell_names(ast.unparse(tree))[2] if n not in bound and not hasattr(builtins, n))


def submission_digest(nb, folder) -> str:
    """A digest of everything the student's kernel can read of a submission: the notebook as it runs and every
    file of its folder (names and bytes; links by their target's name, never followed)."""
    digest = hashlib.sha256(json.dumps(nb, sort_keys=True, default=str).encode())
    for path in sorted(Path(folder).rglob("*")) if folder and Path(folder).is_dir() else ():
        digest.update(b"\0" + str(path.relative_to(folder)).encode("utf-8", "surrogateescape") + b"\0")
        if path.is_symlink():
            digest.update(b"link:" + os.fsencode(os.readlink(path)))
        elif path.is_file():
            try:
                digest.update(path.read_bytes())
            except OSError as exc:  # unreadable: its name and the reason still count
                digest.update(f"unreadable: {exc.errno}".encode())
    return digest.hexdigest()


def salt_for(secret: bytes, student: str, assignment: str, grade_id: str, content: str = "") -> int:
    """The salt of a test cell's hidden cases: an HMAC of the student, the chapter, the cell and ``content``
    (``submission_digest``) under the grader's ``secret``."""
    key = f"{student}\0{assignment}\0{grade_id}\0{content}".encode()
    return int.from_bytes(hmac.new(secret, key, hashlib.sha256).digest()[:8], "big")


STORE_FROM = 20_000  # characters of wire JSON from which an argument is sent once, then by key (wire.Stored)


class Channel:
    """What the grading process needs from the student's kernel: a subclass's ``request(payload)`` returns the
    reply text. ``stored`` mirrors the keys of the large arguments the kernel keeps, oldest first."""

    def send(self, payload: str) -> str:
        """``request(payload)``; the grader's watch does not ring while this waits on the kernel (``_watch``)."""
        return self.request(payload)

    def pack(self, value):
        """``value``, or when it is large a wire.Stored standing for it (by key alone if sent before)."""
        text = wire.dumps(value)
        if len(text) < STORE_FROM:
            return value
        stored, key = vars(self).setdefault("stored", {}), hashlib.sha256(text.encode()).hexdigest()
        if key in stored:
            return wire.Stored(key, None)
        stored[key] = True
        if len(stored) > wire.STORED:
            stored.pop(next(iter(stored)))
        return wire.Stored(key, text)


def ask(channel: Channel, request: dict):
    """Send one request and return the value the student's code produced, or raise its exception (a built-in
    type when it was one, else StudentError). A reply that is not a well-formed reply is a ChannelFailure."""
    text = channel.send(wire.dumps(request))
    try:
        reply = wire.loads(text)
    except wire.WireError as exc:
        raise ChannelFailure(f"the notebook's answer could not be read: {exc}") from None
    if not isinstance(reply, dict) or "ok" not in reply:
        raise ChannelFailure("the notebook's answer could not be read: not a reply")
    if reply["ok"] is True:
        return reply.get("value")
    name, message = str(reply.get("type", "Exception")), str(reply.get("message", ""))
    kind = getattr(builtins, name, None) if reply.get("module") == "builtins" else None
    if isinstance(kind, type) and issubclass(kind, Exception):
        raise kind(message)
    raise StudentError(f"{name}: {message}")


class RemoteFunction:
    """Stands for the notebook's function or class ``name`` (or, with its ``source``, a test cell's
    ``@checks.kernel`` function): a call runs it in the student's kernel, with the open blocks sent along."""

    def __init__(self, channel: Channel, grading: checks.Grading, name: str, source: str | None = None):
        self._channel, self._grading, self.__name__, self._source = channel, grading, name, source

    def _ask(self, op: str, **fields):
        blocked = sorted({path for paths in self._grading.blocked for path in paths})
        return ask(self._channel, {"op": op, "name": self.__name__, "source": self._source, **fields,
                                   "blocked": blocked})

    def __call__(self, *args, **kwargs):
        pack = self._channel.pack
        return self._ask("run" if self._source else "call", args=[pack(a) for a in args],
                         kwargs={k: pack(v) for k, v in kwargs.items()})

    def each(self, cases: list[tuple]) -> list:
        """``[self(*case) for case in cases]`` in one request, or more when the results would not fit in one
        reply (the kernel answers for the first cases, the rest are asked again); a shared argument packed once."""
        packed = {key: self._channel.pack(a) for key, a in {id(a): a for case in cases for a in case}.items()}
        values = []
        while len(values) < len(cases):
            left = cases[len(values):]
            got = self._ask("each", cases=[[packed[id(a)] for a in case] for case in left])
            if not isinstance(got, list) or not 0 < len(got) <= len(left):
                raise ChannelFailure(f"the notebook's answer to {len(left)} calls of {self.__name__} could not "
                                     "be read: not a list of results, one per call")
            values += got
        return values

    def __repr__(self):
        return f"<the notebook's {self.__name__}>"


def judge(source: str, setup: list[str], channel: Channel, salt: int | None,
          seconds: float | None = None) -> Verdict:
    """Run a test cell's visible then hidden tests in this process against the student's kernel, in at most
    ``seconds`` (the kernel's time and the grader's own; None: the channel's deadline alone). The verdict keeps
    what the visible tests printed (and warned), never what the hidden ones printed (it could show their cases)."""
    visible, hidden = split_hidden(source)
    namespace = {"__name__": "__grader__", "__builtins__": builtins}
    try:
        exec(compile("\n".join(setup) + "\n", "<setup imports>", "exec"), namespace)
        visible_code, hidden_code = compile(visible, VISIBLE, "exec"), compile(hidden, HIDDEN, "exec")
        shipped = kernel_functions(visible)  # (never the hidden tests' code: the kernel is the student's)
        names = notebook_names(source, namespace)
    except SyntaxError as exc:  # (the instructor's source: `make lessons` and the tests catch this first)
        return Verdict(False, "visible", "SyntaxError", str(exc))

    def ship(function):
        if function.__name__ not in shipped:
            raise RuntimeError(f"{function.__name__} is marked @checks.kernel inside the hidden tests; "
                               "only visible tests may run code in the student's kernel")
        return RemoteFunction(channel, grading, function.__name__, shipped[function.__name__])

    grading = checks.Grading(ship=ship)
    if "checks" in namespace:
        namespace["checks"] = checks.Checks(grading)
    stage, printed, shown = "visible", io.StringIO(), None
    try:
        with _watch(seconds), contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), \
                warnings.catch_warnings():
            warnings.simplefilter("always")  # (each warning printed where it happens, as in a notebook)
            described = ask(channel, {"op": "describe", "names": names}) if names else {}
            if not isinstance(described, dict):
                raise ChannelFailure("the notebook's answer could not be read: not a description")
            for name in names:
                entry = described.get(name)
                if isinstance(entry, dict) and entry.get("kind") in ("data", "callable"):
                    namespace[name] = (entry.get("value") if entry["kind"] == "data" else
                                       RemoteFunction(channel, grading, name))
            exec(visible_code, namespace)
            stage, shown = "hidden", printed.getvalue()
            grading.salt = salt
            exec(hidden_code, namespace)
    except ChannelFailure as exc:
        if isinstance(exc, GraderTimeout) and isinstance(exc.__context__, ChannelFailure):
            exc = exc.__context__  # (the channel's own failure, which the grader's timer rang over as it unwound)
        ename = "NoAnswer" if type(exc) is ChannelFailure else type(exc).__name__
        decided = Verdict(False, stage, ename, str(exc), lost=isinstance(exc, KernelLost))
    except Exception as exc:  # (line: the innermost of the visible tests' frames, never a hidden test's)
        lines = [line for frame, line in traceback.walk_tb(exc.__traceback__) if frame.f_code.co_filename == VISIBLE]
        decided = Verdict(False, stage, type(exc).__name__, str(exc), line=lines[-1] if lines else None)
    else:
        decided = Verdict(True)
    decided.printed = printed.getvalue() if shown is None else shown
    return decided
