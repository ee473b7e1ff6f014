"""The grader's agent in the student's kernel (IPython extension): answers on the comm ``TARGET``, never trusted."""

from __future__ import annotations

import sys

from . import checks, wire

TARGET = "posenc-grader"
EACH_BYTES = wire.MAX_BYTES - (64 << 10)  # the results of one ``each`` reply (room left for the reply around them)
FLUSH_CHARS = 1 << 20


_OK_BEFORE, _OK_AFTER = wire.dumps({"ok": True, "value": None}).split("null")  # around an answer's text
_STORED: dict = {}  # key -> value of the large arguments the grader sent (wire.Stored), oldest first


def _unstore(value):
    """A call's argument as the student's code gets it: a wire.Stored is looked up (or kept, the first time)."""
    if isinstance(value, wire.Stored) and value.text is not None:
        _STORED[value.key] = wire.loads(value.text)
        if len(_STORED) > wire.STORED:
            _STORED.pop(next(iter(_STORED)))
    return _STORED[value.key] if isinstance(value, wire.Stored) else value


def _call(request: dict, namespace: dict) -> str:
    """The wire text of the notebook's function ``name`` (or a test cell's, with its ``source``) called on the
    request's arguments; for ``each``, of the list of its results on the cases in order, up to ``EACH_BYTES``
    (the first result always goes: the grader asks again for the rest)."""
    scope = dict(namespace) if request.get("source") else namespace
    if request.get("source"):
        exec(compile(request["source"], "<test function>", "exec"), scope)
    target = scope[request["name"]]
    if request["op"] != "each":
        return wire.dumps(target(*map(_unstore, request.get("args", ())),
                                 **{k: _unstore(v) for k, v in request.get("kwargs", {}).items()}))
    texts, size = [], 0
    for case in request["cases"]:
        text = wire.dumps(target(*[_unstore(a) for a in case]))
        size += len(text) + 2
        if texts and size > EACH_BYTES:
            break
        texts.append(text)
    return "[" + ", ".join(texts) + "]"


def _error(exc: BaseException) -> str:
    message = f"the answer cannot be sent to the grader: {exc}" if isinstance(exc, wire.WireError) else str(exc)
    return wire.dumps({"ok": False, "type": type(exc).__name__, "module": type(exc).__module__,
                       "message": message[:4000]})


def reply(text: str, namespace: dict) -> str:
    """The wire text of the reply to one request on the notebook's ``namespace``: ``{"ok": True, "value": ...}``
    or ``{"ok": False, "type", "module", "message"}`` (an answer the wire cannot carry: a WireError in words)."""
    try:
        request = wire.loads(text)
        if request["op"] == "describe":  # (a name the notebook does not define is left out)
            found = {name: namespace[name] for name in request["names"] if name in namespace}
            return wire.dumps({"ok": True, "value": {name: {"kind": "callable"} if callable(value) else
                                                     {"kind": "data", "value": value}
                                                     for name, value in found.items()}})
        # The call, the encoding of its answer and the text of its exception all happen inside the block: an
        # answer whose __float__ or __str__ calls posenc would otherwise run after the block is lifted.
        with checks.blocked(*request.get("blocked", [])):
            try:
                answer = _OK_BEFORE + _call(request, namespace) + _OK_AFTER
            except BaseException as exc:
                return _error(exc)
        if len(answer) > wire.MAX_BYTES:
            raise wire.WireError(f"the answer is larger than {wire.MAX_BYTES >> 20} MB")
        return answer
    except BaseException as exc:  # the student's exception is the answer (KeyboardInterrupt: an interrupt)
        return _error(exc)


def bounded_writes(stream) -> None:
    """Make ``stream`` (the kernel's stdout or stderr) send what it was given at least every FLUSH_CHARS
    characters, a long string in pieces of that size: ipykernel sends what a cell prints in 0.2 s as one
    message, which an endless print loop made larger than the grading process accepts."""
    write, pending = stream.write, 0

    def bounded(string):
        nonlocal pending
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

    def on_open(comm, open_msg):
        comm.on_msg(lambda msg: comm.send({"reply": reply(msg.get("content", {}).get("data", {}).get("request"),
                                                          shell.user_ns)}))

    get_comm_manager().register_target(TARGET, on_open)
    for stream in (sys.stdout, sys.stderr):
        if type(stream).__name__ == "OutStream":  # (ipykernel's: what the kernel sends to the grader)
            bounded_writes(stream)
