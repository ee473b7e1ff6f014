"""An IPython extension for grading kernels: before every cell, put IPython's hooks back as they were.

A solution cell can register IPython machinery that runs for every *later* cell, test cells included: input
transformers that rewrite the test's source, AST transformers that drop its asserts, a custom exception
handler or a replaced ``showtraceback`` that hides its failure, ``pre_run_cell``/``post_run_cell`` callbacks,
a replaced display hook. The verdict does not depend on any of that (``autograder.verdict`` decides tests in
the grading process), but these payloads should fail loudly rather than quietly: loaded with
``--IPKernelApp.extensions=autograder.kernel_guard`` (the course's ``Execute.extra_arguments``), this takes a
snapshot when the kernel starts, before any notebook code, and before each execute request restores every
hook to it and prints which ones it removed.

It also sends the notebook's printed output in messages of at most about ``FLUSH_CHARS`` characters
(``bounded_writes``): ipykernel gathers what a cell prints for 0.2 s and sends it as one message, so a loop
that prints without end (a mistake, not an attack) made messages of hundreds of MB, which the grading process
refuses unread (``sandbox.MAX_MESSAGE_BYTES``), losing the kernel's output and the cell's timeout note. In
pieces, the grader's output cap cuts the flood and the timeout stops it as for any cell.

It runs in the student's process, so code that sets out to can undo it; it is a second layer, not the
defence.
"""

from __future__ import annotations

import sys

_SNAPSHOT: dict = {}
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


def _state(shell) -> dict:
    return {
        "input_transformers_cleanup": list(shell.input_transformers_cleanup),
        "input_transformers_post": list(shell.input_transformers_post),
        "input_transformer_manager": shell.input_transformer_manager,
        "ast_transformers": list(shell.ast_transformers),
        "custom_exceptions": shell.custom_exceptions,
        "CustomTB": shell.CustomTB,
        "displayhook": shell.displayhook,
        "display_pub": shell.display_pub,
        "sys.displayhook": sys.displayhook,
        "sys.excepthook": sys.excepthook,
        "events": {name: list(callbacks) for name, callbacks in shell.events.callbacks.items()},
        "instance": {name: shell.__dict__.get(name) for name in
                     ("showtraceback", "showsyntaxerror", "run_cell", "run_cell_async", "run_ast_nodes",
                      "run_code", "transform_cell", "_showtraceback")},
    }


def restore(shell) -> list[str]:
    """Put every hook back as in the snapshot; the names of those that had changed."""
    was, now, changed = _SNAPSHOT, _state(shell), []
    for name in ("input_transformers_cleanup", "input_transformers_post", "ast_transformers"):
        if now[name] != was[name]:
            getattr(shell, name)[:] = was[name]
            changed.append(name)
    for name in ("input_transformer_manager", "custom_exceptions", "CustomTB", "displayhook", "display_pub"):
        if now[name] is not was[name]:
            setattr(shell, name, was[name])
            changed.append(name)
    if sys.displayhook is not was["sys.displayhook"]:
        sys.displayhook = was["sys.displayhook"]
        changed.append("sys.displayhook")
    if sys.excepthook is not was["sys.excepthook"]:
        sys.excepthook = was["sys.excepthook"]
        changed.append("sys.excepthook")
    for name, callbacks in now["events"].items():
        if callbacks != was["events"].get(name, []):
            shell.events.callbacks[name] = list(was["events"].get(name, []))
            changed.append(f"events[{name!r}]")
    for name, value in now["instance"].items():
        if value is not was["instance"][name]:
            if was["instance"][name] is None:
                shell.__dict__.pop(name, None)
            else:
                shell.__dict__[name] = was["instance"][name]
            changed.append(name)
    return changed


def load_ipython_extension(shell) -> None:
    kernel = getattr(shell, "kernel", None)
    if kernel is None or _SNAPSHOT:
        return
    _SNAPSHOT.update(_state(shell))
    original = kernel.do_execute

    def do_execute(code, silent, *args, **kwargs):
        changed = restore(shell)
        if changed and not silent:
            print("The grader removed IPython hooks that an earlier cell had set (they would run for every "
                  f"later cell, tests included): {', '.join(changed)}.")
        return original(code, silent, *args, **kwargs)

    kernel.do_execute = do_execute
    for stream in (sys.stdout, sys.stderr):
        if type(stream).__name__ == "OutStream":  # (ipykernel's: what the kernel sends to the grader)
            bounded_writes(stream)
