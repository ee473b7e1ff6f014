"""The helpers a locked test cell reads as ``checks.<name>`` (``Checks``: the notebook's, or the grader's)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.abc
import importlib.util
import inspect
import sys
import types
import warnings
from typing import Callable

import numpy as np

# float32 keeps 24 bits (unit roundoff 2**-24, about 6e-8); 1e-5 is about 170 of its roundings: room for the
# error of a computation of a few hundred operations, far below what separates a right answer from a wrong one.
FLOAT32 = 1e-5
REFUSAL = "{} is the reference this exercise asks you to write yourself; your code must not call it here"


def _arrays(actual, expected, what):
    """``actual`` and ``expected`` as float64 arrays of one shape, or AssertionError in words."""
    if hasattr(actual, "detach") and hasattr(actual, "numpy"):  # torch tensor
        actual = actual.detach().cpu().numpy()
    try:
        a = np.array(actual, dtype=np.float64)
    except (TypeError, ValueError):
        kind = getattr(actual, "type_name", None) or type(actual).__name__  # (wire.Unsupported: the original type)
        raise AssertionError(f"{what} should be numbers (an array or a float), got {kind}: "
                             f"{str(actual)[:80]}") from None
    e = np.array(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"{what} should have shape {e.shape}, got shape {a.shape}")
    return a, e


def close(actual, expected, what="the answer", atol=1e-8, rtol=1e-8, *, count=None, float32=False, scale=None):
    """Assert that ``actual`` equals ``expected`` within atol + rtol·|expected|, with a message in words.

    * ``count=n``: the answer is a fraction k/n of a count: atol 1/(4n), no rtol, so (k ± 1)/n fails.
    * ``float32=True``: the prompt does not pin float64. The tolerance is ``FLOAT32`` relative plus
      ``FLOAT32 * scale`` absolute, ``scale`` the size of the numbers the computation handles: by default the
      largest ``|expected|``; larger where intermediates are (logits in the thousands); 0 where only relative
      error means anything (frequencies spanning decades).
    """
    if actual is None:
        raise AssertionError(f"{what} is None: did the function forget to return its result?")
    a, e = _arrays(actual, expected, what)
    if not np.isfinite(a).all():
        raise AssertionError(f"{what} contains NaN or inf")
    if not np.isfinite(e).all():  # (a value the test derived from the notebook's answers: nothing equals it)
        raise AssertionError(f"{what}: the value it is compared with is NaN or inf (computed from the "
                             "notebook's other answers?)")
    if count is not None:
        atol, rtol = 0.25 / float(count), 0.0
    if float32:
        size = float(abs(e).max()) if scale is None and e.size else float(scale or 0.0)
        atol, rtol = max(atol, FLOAT32 * size), max(rtol, FLOAT32)
    err = abs(a - e) - (atol + rtol * abs(e))
    if a.size and float(err.max()) > 0:
        index = np.unravel_index(int(np.argmax(err)), err.shape)  # (the worst entry)
        raise AssertionError(f"{what}{list(map(int, index)) if index else ''} should be {float(e[index]):.10g}, "
                             f"got {float(a[index]):.10g}")


def rounded32(size, roundings=16):
    """The error of ``roundings`` float32 roundings (unit roundoff 2**-24) of numbers as large as ``size``: the
    ``atol`` for a float32 answer whose computation handles numbers larger than the answer itself."""
    return roundings * 2.0 ** -24 * float(size)


def equal(actual, expected, what="the answer"):
    """Assert exact equality of integer arrays or scalars (ids, buckets, counts), with a message in words."""
    a, e = _arrays(actual, expected, what)
    wrong = a != e
    if wrong.any():
        index = np.unravel_index(int(np.argmax(wrong)), wrong.shape)  # (the first wrong entry)
        raise AssertionError(f"{what}{list(map(int, index)) if index else ''} should be {e[index]:g}, "
                             f"got {a[index]:g} ({int(wrong.sum())} of {wrong.size} entries differ)")


def _blocked(qualname, n_freevars):
    """A code object that raises, with as many free variables as the function it replaces (Python requires it)."""
    free = ", ".join(f"_{i}" for i in range(n_freevars))
    namespace = {}
    exec(f"def outer({free}):\n    def blocked(*args, **kwargs):\n        {free}\n"
         f"        raise RuntimeError({REFUSAL.format(qualname)!r})\n    return blocked\n", namespace)
    return namespace["outer"](*[None] * n_freevars).__code__


@dataclasses.dataclass(eq=False)
class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses to import the modules that hold a blocked reference ({module: reference}), while a block runs."""
    modules: dict[str, str]

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.modules:
            raise RuntimeError(REFUSAL.format(self.modules[fullname]))


def _lookup(path: str, refuse: _Refuse) -> object:
    """The object a dotted path names, an imported module first where a name is both (posenc.attention is a module
    and a function of posenc); None for a path through a module not imported yet, whose import ``refuse`` refuses."""
    parts = path.split(".")
    found = importlib.import_module(parts[0])
    for end in range(2, len(parts) + 1):
        name = ".".join(parts[:end])
        found = sys.modules.get(name) or getattr(found, parts[end - 1], None)
        if found is None:
            if importlib.util.find_spec(name) is None:  # (or ModuleNotFoundError, a parent not a package)
                raise ImportError(f"no module for {path}")
            refuse.modules[name] = path
            return None
    return found


@contextlib.contextmanager
def blocked(*references):
    """Make posenc functions, classes or whole modules (or dotted paths to them) raise while the block runs, by
    swapping each function's code (every name it was imported under is caught; restored on exit). A reference in
    a module not imported yet (a torch module posenc loads on first use) is not imported: its import is refused."""
    targets, refuse = {}, _Refuse({})
    for ref in references:
        if isinstance(ref, str):
            ref = _lookup(ref, refuse)
            if ref is None:
                continue
        if inspect.ismodule(ref):
            targets.update({f"{ref.__name__}.{n}": f for n, f in vars(ref).items()
                            if isinstance(f, types.FunctionType) and f.__module__ == ref.__name__})
        elif inspect.isclass(ref):
            targets.update({f"{ref.__qualname__}.{n}": f for n, f in vars(ref).items()
                            if isinstance(f, types.FunctionType)})
        elif isinstance(ref, types.FunctionType):
            targets[f"posenc.{ref.__name__}"] = ref
        else:
            raise TypeError(f"without() takes posenc functions, classes or modules, got {ref!r}")
    saved = {name: fn.__code__ for name, fn in targets.items()}
    sys.meta_path.insert(0, refuse)
    try:
        for name, fn in targets.items():
            fn.__code__ = _blocked(name, len(fn.__code__.co_freevars))
        yield
    finally:
        sys.meta_path.remove(refuse)
        for name, fn in targets.items():
            fn.__code__ = saved[name]


def warnings_on_stdout():
    """Show warnings on stdout from now on: nbgrader's Validate counts anything a test cell writes to stderr as a
    failed test, and a warning is not one."""
    warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stdout.write(
        warnings.formatwarning(message, category, filename, lineno, line))


@dataclasses.dataclass
class Grading:
    """What the grading process hands a test cell: ``ship`` turns a ``@kernel`` function into a stand-in that
    runs it in the student's kernel, ``salt`` seeds the hidden tests' cases (None in the visible tests),
    ``blocked`` holds the paths each open ``without`` names."""
    ship: Callable
    salt: int | None = None
    blocked: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(eq=False)  # (hashable: its bound methods are the notebook's helpers)
class Checks:
    """The helpers a test cell reads as ``checks``: in the notebook, the module's own (``grading`` None: the
    student's code called directly); while autograding, one bound to the grader's ``Grading`` context."""

    grading: Grading | None = None
    FLOAT32 = FLOAT32
    close, equal, rounded32 = staticmethod(close), staticmethod(equal), staticmethod(rounded32)
    warnings_on_stdout = staticmethod(warnings_on_stdout)

    def rng(self, seed):
        """The random generator of a test's cases: seeded with ``seed`` alone in the notebook and the visible
        tests; in the hidden tests while grading, with ``seed`` and the grader's salt for this submission."""
        salt = None if self.grading is None else self.grading.salt
        return np.random.default_rng(seed if salt is None else [seed, salt])

    def kernel(self, function):
        """Mark a test cell's function that must run where the student's code runs (it builds the student's
        objects, calls their methods, spies on what their code calls) and returns only values. While grading,
        its source is sent into the student's kernel: keep the checks outside such functions."""
        return function if self.grading is None else self.grading.ship(function)

    @contextlib.contextmanager
    def without(self, *references):
        """Make posenc's references (functions, classes, modules or dotted paths) raise while the block's calls
        of the student's code run (``blocked``)."""
        if self.grading is None:
            with blocked(*references):
                yield
            return
        self.grading.blocked.append([ref if isinstance(ref, str) else ref.__name__ if inspect.ismodule(ref)
                                     else f"{ref.__module__}.{ref.__qualname__}" for ref in references])
        try:
            yield
        finally:
            self.grading.blocked.pop()

    def each(self, function, cases) -> list:
        """``[function(*case) for case in cases]``: while grading, the stand-in of a notebook's function gets
        every case in one request (its ``each``)."""
        cases = [tuple(case) for case in cases]
        if self.grading is not None and hasattr(function, "each"):
            return function.each(cases)
        return [function(*case) for case in cases]

    def each_case(self, function, cases, judge, *, call=None, calls=None, blocked=(), name=None) -> None:
        """The hidden-test pattern: the student's ``function`` on every case in one request (``each``), with
        ``blocked`` references blocked (``without``); then, here, ``judge(*case, result)`` on each case in order,
        which raises AssertionError in words, raised again with its case named first (``name(*case)``, or "case
        3 of 20"). The function gets ``case`` itself, or ``call(*case)`` where a case carries more than the call;
        where a case is judged on several calls, ``calls(*case)`` instead lists them, the judge gets the results."""
        cases = [tuple(case) for case in cases]
        grouped = [[tuple(c) for c in calls(*case)] if calls else [tuple(call(*case)) if call else case]
                   for case in cases]
        with self.without(*blocked):
            results = iter(self.each(function, [c for group in grouped for c in group]))
        for index, (case, group) in enumerate(zip(cases, grouped)):
            got = [next(results) for _ in group]
            try:
                judge(*case, got if calls is not None else got[0])
            except AssertionError as err:
                where = name(*case) if name is not None else f"case {index + 1} of {len(cases)}"
                raise AssertionError(f"{where}: {err}") from None


_NOTEBOOK = Checks()  # the notebook's own: the student's code called directly
rng, kernel, without, each, each_case = (_NOTEBOOK.rng, _NOTEBOOK.kernel, _NOTEBOOK.without, _NOTEBOOK.each,
                                         _NOTEBOOK.each_case)
