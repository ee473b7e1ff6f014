"""An IPython extension for grading kernels: before every cell, put IPython's hooks back as they were.

A solution cell can register IPython machinery that runs for every *later* cell, test cells included: input
transformers that rewrite the test's source, AST transformers that drop its asserts, a custom exception
handler or a replaced ``showtraceback`` that hides its failure, ``pre_run_cell``/``post_run_cell`` callbacks,
a replaced display hook. The verdict does not depend on any of that (``autograder.verdict`` decides tests in
the grading process), but these payloads should fail loudly rather than quietly: loaded with
``--IPKernelApp.extensions=autograder.kernel_guard`` (the course's ``Execute.extra_arguments``), this takes a
snapshot when the kernel starts, before any notebook code, and before each execute request restores every
hook to it and prints which ones it removed.

It runs in the student's process, so code that sets out to can undo it; it is a second layer, not the
defence.
"""

from __future__ import annotations

import sys

_SNAPSHOT: dict = {}


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
