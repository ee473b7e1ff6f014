"""The grader's agent inside a student's kernel: calls the student's code on inputs the grader sends.

While autograding, the grading process (``autograder.verdict``) decides each test from values. Loaded as an
IPython extension when the grading kernel starts (``--IPKernelApp.extensions``), this module opens a comm
target, ``TARGET``: the grader sends each request as a comm message and reads the reply from the comm
(a comm message skips IPython's cell machinery: about 1 ms a call against 4 ms for an execute request).
A request is one of:

* ``describe``: for each name, whether the notebook defines it, and its value if it is data;
* ``call``: call the notebook's function or class ``name`` with the given arguments;
* ``run``: define a function the test cell marked ``@checks.kernel`` (its source, sent by the grader) in a
  copy of the notebook's namespace and call it;
* ``each``: call the notebook's function (or a ``run`` function, when the source comes along) once per case,
  in one request (``checks.each``), and reply with the list of results: of the first cases only when the
  results of all would not fit in one reply (``wire.MAX_BYTES``), and the grader asks again for the rest.

Arguments and results travel as ``autograder.wire`` values, never pickles. Everything here runs in the
student's process and can be replaced by the student's code: nothing it says is trusted. The grader only
uses what it returns as the student's answers, and checks them against posenc in its own process.

It also sends the notebook's printed output in messages of at most about ``FLUSH_CHARS`` characters
(``bounded_writes``): ipykernel gathers what a cell prints for 0.2 s and sends it as one message, so a loop
that prints without end (a mistake, not an attack) made messages of hundreds of MB, which the grading process
refuses unread (``sandbox.MAX_MESSAGE_BYTES``), losing the kernel's output and the cell's timeout note. In
pieces, the grader's output cap cuts the flood and the timeout stops it as for any cell.
"""

from __future__ import annotations

import json
import sys

from . import wire

TARGET = "posenc-grader"


def _namespace() -> dict:
    from IPython import get_ipython

    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


def _blocked(paths):
    """The references the grader's test blocks around this call, blocked here too, found by their dotted
    paths (``checks.blocked``: a reference in a module not imported yet has that module's import refused)."""
    from . import checks

    return checks.blocked(*paths)


_STORED: dict = {}  # key -> value of the large arguments the grader sent (wire.Stored), oldest first


def _unstore(value):
    """A call's argument as the student's code gets it: a wire.Stored is looked up (or kept, the first time)."""
    if not isinstance(value, wire.Stored):
        return value
    if value.text is not None:
        _STORED[value.key] = wire.loads(value.text)
        while len(_STORED) > wire.STORED:
            _STORED.pop(next(iter(_STORED)))
    return _STORED[value.key]


def _describe(names, namespace: dict) -> dict:
    found = {}
    for name in names:
        if name not in namespace:
            found[name] = {"kind": "missing"}
        elif callable(namespace[name]):
            found[name] = {"kind": "callable"}
        else:
            found[name] = {"kind": "data", "value": namespace[name]}
    return found


EACH_BYTES = wire.MAX_BYTES - (64 << 10)  # the results of one ``each`` reply (room left for the reply around them)


def _each(target, cases) -> list:
    """``target`` on the cases in order, each result encoded as it comes; stops at the case whose result
    would take the reply past ``EACH_BYTES`` and leaves it out (the grader sends it and the cases after it
    again, so that case runs twice). The first result always goes, so a single result too large to send fails
    alone, in words."""
    results, size = [], 0
    for case in cases:
        tree = wire.encode(target(*case))
        size += len(json.dumps(tree)) + 2
        if results and size > EACH_BYTES:
            break
        results.append(wire.Encoded(tree))
    return results


def _call(request: dict, namespace: dict):
    if "source" in request:  # a function of the test cell (op "run", or "each" over one)
        scope = dict(namespace)
        exec(compile(request["source"], "<test function>", "exec"), scope)
        target = scope[request["name"]]
    else:
        target = namespace[request["name"]]
    if request["op"] == "each":
        cases = [[_unstore(a) for a in case] for case in request["cases"]]
        return _each(target, cases)
    args = [_unstore(a) for a in request.get("args", ())]
    kwargs = {k: _unstore(v) for k, v in request.get("kwargs", {}).items()}
    return wire.Encoded(wire.encode(target(*args, **kwargs)))  # (encoded here: see handle)


def handle(text: str, namespace: dict | None = None) -> dict:
    """The reply to one request: ``{"ok": True, "value": ...}`` or ``{"ok": False, "type", "message"}``.
    ``namespace`` is the notebook's (the kernel's user namespace by default)."""
    namespace = _namespace() if namespace is None else namespace
    try:
        request = wire.loads(text)
        if request["op"] == "describe":
            return {"ok": True, "value": _describe(request["names"], namespace)}
        # The call, the encoding of its answer and the text of its exception all happen inside the block: an
        # answer whose __float__ or __str__ calls posenc would otherwise run after the block is lifted.
        with _blocked(request.get("blocked", [])):
            try:
                return {"ok": True, "value": _call(request, namespace)}
            except wire.WireError as exc:
                return _unsendable(exc)
            except BaseException as exc:
                return _error(exc)
    except BaseException as exc:  # the student's exception is the answer (KeyboardInterrupt: an interrupt)
        return _error(exc)


def _error(exc: BaseException) -> dict:
    return {"ok": False, "type": type(exc).__name__, "module": type(exc).__module__, "message": str(exc)[:4000]}


def _unsendable(exc: Exception) -> dict:
    """The reply for an answer the wire cannot carry (too large, too deep), in words."""
    return {"ok": False, "type": "WireError", "module": "autograder.wire",
            "message": f"the answer cannot be sent to the grader: {exc}"}


def reply(text: str, namespace: dict | None = None) -> str:
    """The wire text of :func:`handle`'s reply; an answer that cannot be sent (too large) is an error in words."""
    try:
        return wire.dumps(handle(text, namespace))
    except (wire.WireError, ValueError) as exc:
        return wire.dumps(_unsendable(exc))


def _on_open(comm, open_msg) -> None:
    """Answer every message on the grader's comm with the reply to the request it carries."""
    @comm.on_msg
    def _reply(msg):
        comm.send({"reply": reply(msg.get("content", {}).get("data", {}).get("request"))})


FLUSH_CHARS = 1 << 20


def bounded_writes(stream) -> None:
    """Make ``stream`` (the kernel's stdout or stderr) send what it was given at least every FLUSH_CHARS
    characters, a long string in pieces of that size."""
    write, pending = stream.write, 0

    def bounded(string):
        nonlocal pending
        if not isinstance(string, str) or len(string) + pending < FLUSH_CHARS:
            pending += len(string) if isinstance(string, str) else 0
            return write(string)  # (ipykernel's own error for what is not a str)
        for start in range(0, len(string), FLUSH_CHARS):
            piece = string[start:start + FLUSH_CHARS]
            write(piece)
            pending += len(piece)
            if pending >= FLUSH_CHARS:
                pending = 0
                stream.flush()
        return len(string)

    stream.write = bounded


def load_ipython_extension(shell) -> None:
    """Open the grader's comm target in this kernel (before any notebook code runs), and bound the size of
    the kernel's output messages."""
    from comm import get_comm_manager

    get_comm_manager().register_target(TARGET, _on_open)
    for stream in (sys.stdout, sys.stderr):
        if type(stream).__name__ == "OutStream":  # (ipykernel's: what the kernel sends to the grader)
            bounded_writes(stream)
