"""The grader's agent inside a student's kernel: calls the student's code on inputs the grader sends.

While autograding, the grading process (``autograder.verdict``) decides each test from values. It sends a
request to the kernel as one silent execute request, ``__import__('autograder.agent').agent.serve('...')``,
and reads back the reply this module publishes as display data of type ``MIME``. A request is one of:

* ``describe``: for each name, whether the notebook defines it, and its value if it is data;
* ``call``: call the notebook's function or class ``name`` with the given arguments;
* ``run``: define a function the test cell marked ``@checks.kernel`` (its source, sent by the grader) in a
  copy of the notebook's namespace and call it.

Arguments and results travel as ``autograder.wire`` values, never pickles. Everything here runs in the
student's process and can be replaced by the student's code: nothing it says is trusted. The grader only
uses what it returns as the student's answers, and checks them against posenc in its own process.
"""

from __future__ import annotations

import importlib

from . import wire

MIME = "application/x-posenc-reply"


def _namespace() -> dict:
    from IPython import get_ipython

    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


def _reference(path: str):
    """The posenc object named by a dotted path (a module, or an attribute chain inside one)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def _blocked(paths):
    """The references the grader's test blocks around this call, blocked here too (checks.blocked)."""
    from . import checks

    return checks.blocked(*[_reference(p) for p in paths])


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


def _call(request: dict, namespace: dict):
    if request["op"] == "run":
        scope = dict(namespace)
        exec(compile(request["source"], "<test function>", "exec"), scope)
        target = scope[request["name"]]
    else:
        target = namespace[request["name"]]
    with _blocked(request.get("blocked", [])):
        return target(*request.get("args", ()), **request.get("kwargs", {}))


def handle(text: str, namespace: dict | None = None) -> dict:
    """The reply to one request: ``{"ok": True, "value": ...}`` or ``{"ok": False, "type", "message"}``.
    ``namespace`` is the notebook's (the kernel's user namespace by default)."""
    namespace = _namespace() if namespace is None else namespace
    try:
        request = wire.loads(text)
        if request["op"] == "describe":
            return {"ok": True, "value": _describe(request["names"], namespace)}
        return {"ok": True, "value": _call(request, namespace)}
    except BaseException as exc:  # the student's exception is the answer (KeyboardInterrupt: an interrupt)
        return {"ok": False, "type": type(exc).__name__, "module": type(exc).__module__,
                "message": str(exc)[:4000]}


def serve(text: str) -> None:
    """Handle one request and publish the reply as display data (the grader reads it from the iopub stream)."""
    from IPython.display import publish_display_data

    reply = handle(text)
    try:
        payload = wire.dumps(reply)
    except (wire.WireError, ValueError) as exc:
        payload = wire.dumps({"ok": False, "type": "WireError", "module": "autograder.wire",
                              "message": f"the answer cannot be sent to the grader: {exc}"})
    publish_display_data({MIME: payload})
