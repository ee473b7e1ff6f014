"""What hostile submissions put at the top of a solution cell. Each payload is the body of a function here (never
called in this process): ``body(function)`` is its code as a cell would hold it, so that the linter and the
tests read the code the sandboxed kernel runs. The kernel provides ``get_ipython``; it is imported here only so
that the names resolve."""

from __future__ import annotations

import ast
import inspect
import textwrap

from IPython import get_ipython


def body(function) -> str:
    """The statements of a function's body (its docstring left out), dedented: cell code."""
    lines = textwrap.dedent(inspect.getsource(function)).splitlines()
    statements = ast.parse("\n".join(lines)).body[0].body
    if isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant):
        statements = statements[1:]
    return textwrap.dedent("\n".join(lines[statements[0].lineno - 1:statements[-1].end_lineno]))


# ---------------------------------------------------------------------------------------------------------
# Monkeypatches of what a test might compare with, on correct code: the grader decides from values in its own
# process, and no test runs in the kernel, so they change nothing (full marks).

def patch_allclose():
    import numpy
    numpy.allclose = lambda *args, **kwargs: True
    numpy.isclose = lambda *args, **kwargs: True


def patch_testing():
    import numpy.testing
    numpy.testing.assert_allclose = lambda *args, **kwargs: None
    numpy.testing.assert_array_equal = lambda *args, **kwargs: None


def patch_isclose():
    import math
    math.isclose = lambda *args, **kwargs: True


def patch_posenc():
    """Every posenc function replaced by a pass-through: behaviour unchanged, identity changed."""
    import posenc as _p
    for _name in list(_p.__all__):
        _f = getattr(_p, _name)
        if callable(_f) and not isinstance(_f, type):
            setattr(_p, _name, (lambda g: lambda *args, **kwargs: g(*args, **kwargs))(_f))


PATCHES = {f.__name__: body(f) for f in (patch_allclose, patch_testing, patch_isclose, patch_posenc)}


# ---------------------------------------------------------------------------------------------------------
# IPython payloads that made nbgrader score full marks while it read the verdict from the kernel's own outputs:
# each registers machinery that runs for every later cell (input and AST transformers, custom exception
# handlers, run-cell events, the display hook, a thread publishing through the kernel's session), one only
# when it detects it is being graded. On the untouched lesson every test must still score 0.

def hook_transform_pass():
    get_ipython().input_transformers_post.append(lambda lines: ["pass\n"])


def hook_transform_try():
    def _wrap(lines):
        return ["try:\n"] + ["    " + line for line in lines] + ["\nexcept BaseException:\n    pass\n"]
    get_ipython().input_transformers_cleanup.append(_wrap)


def hook_ast_asserts():
    import ast

    class _Drop(ast.NodeTransformer):
        def visit_Assert(self, node):
            return ast.Pass()

        def visit_Raise(self, node):
            return ast.Pass()
    get_ipython().ast_transformers.append(_Drop())


def hook_custom_exc():
    _ip = get_ipython()
    _ip.set_custom_exc((BaseException,), lambda *args, **kwargs: None)

    def _clear(result):
        result.error_in_exec = None
    _ip.events.register("post_run_cell", _clear)


def hook_showtraceback():
    _ip = get_ipython()
    _ip.showtraceback = lambda *args, **kwargs: None

    def _clear(result):
        result.error_in_exec = None
    _ip.events.register("post_run_cell", _clear)


def hook_displayhook():
    _ip = get_ipython()
    _ip.events.register("pre_run_cell", lambda info: _ip.displayhook("full marks"))


def hook_thread():
    import threading
    import time
    _k = get_ipython().kernel

    def _publish():
        while True:
            _k.session.send(_k.iopub_socket, "execute_result", {"data": {"text/plain": "1.0"}, "metadata": {},
                                                                "execution_count": 1}, parent=_k.get_parent("shell"))
            time.sleep(0.01)
    threading.Thread(target=_publish, daemon=True).start()


def hook_when_graded():
    import os
    import socket
    if socket.gethostname() == "sandbox" or not os.path.exists(os.path.expanduser("~/.bashrc")):
        _ip = get_ipython()
        _ip.kernel.do_execute = type(_ip.kernel).do_execute.__get__(_ip.kernel)  # undo the guard
        _ip.input_transformers_post.append(lambda lines: ["pass\n"])


def forge_replies():
    """The grader's own agent in the kernel replaced: every name "is a function", every call "returns" 0."""
    import autograder.agent as _agent
    import autograder.wire as _wire

    def _forged(text, namespace=None):
        request = _wire.loads(text)
        if request["op"] == "describe":
            return _wire.dumps({"ok": True, "value": {n: {"kind": "callable"} for n in request["names"]}})
        return _wire.dumps({"ok": True, "value": 0.0})
    _agent.reply = _forged


PAYLOADS = {f.__name__: body(f) for f in (hook_transform_pass, hook_transform_try, hook_ast_asserts,
                                          hook_custom_exc, hook_showtraceback, hook_displayhook, hook_thread,
                                          hook_when_graded, forge_replies)}


def harmless_hooks():
    """Hooks a correct solution may carry for its own reasons: the grade must not change."""
    import time
    _ip = get_ipython()
    _ip.input_transformers_post.append(lambda lines: lines)
    _ip.events.register('pre_run_cell', lambda info: setattr(_ip, '_cell_started', time.time()))
    _ip.set_custom_exc((ZeroDivisionError,), lambda shell, etype, value, tb, tb_offset=None:
                       shell.showtraceback((etype, value, tb), tb_offset=tb_offset))
    import warnings
    warnings.warn('a harmless warning on stderr')


HARMLESS_HOOKS = body(harmless_hooks) + "\n"


# ---------------------------------------------------------------------------------------------------------
# Checks that accept anything: the two ways a solution cell can put them in the tests' way.

def rebinds_checks():
    class checks:
        close = equal = untampered = staticmethod(lambda *args, **kwargs: None)
        rng = staticmethod(lambda seed: __import__('numpy').random.default_rng(seed))
        without = staticmethod(lambda *args, **kwargs: __import__('contextlib').nullcontext())


def patches_checks():
    """(the kernel's checks replaced: no test uses them while grading)"""
    from autograder import checks as _real
    for _name in ('close', 'equal'):
        setattr(_real, _name, lambda *args, **kwargs: None)
    _real.without = lambda *args, **kwargs: __import__('contextlib').nullcontext()


FAKE_CHECKS = {f.__name__: body(f) for f in (rebinds_checks, patches_checks)}


# ---------------------------------------------------------------------------------------------------------
# Code that disturbs grading (the disruptive, stubborn and os._exit students).

def flood_output():
    print('x' * 30_000_000)
    for _line in range(100_000):
        print(_line)


def endless_loop():
    while True:
        pass


def exits():
    import sys
    sys.exit(0)


def kills_kernel():
    import os
    os._exit(1)


def swallows_interrupts():
    import time
    while True:
        try:
            time.sleep(1)
        except KeyboardInterrupt:
            pass
