"""Helpers for the locked test cells of the exercises, and the context the grader hands them.

* ``close(actual, expected, what)`` compares a student's answer to posenc's and says in words what is wrong:
  the shape, or which entry, its value and the expected one. Its tolerance is said by what is compared:
  1e-8 by default (float64 arithmetic), ``count=n`` for a fraction of a count over n, ``float32=True`` where
  the prompt does not pin float64 (see its docstring).
* ``without(...)`` makes posenc's reference unusable while a student's implementation runs, so an
  exercise that asks for an implementation cannot be passed by calling posenc's.
* ``rng``, ``kernel``, ``each`` and ``each_case`` are where a test cell meets the student's code.

A test cell reads them as ``checks.<name>``. In the student's notebook (and in nbgrader's Validate) that is this
module, and everything runs in the student's kernel. While autograding, test cells run only in the grading
process (``autograder.verdict``), which hands each one a ``Checks`` bound to a ``Grading`` context instead: the
student's functions are stand-ins that call into the kernel, ``kernel`` ships a test-cell function there,
``without`` sends what it blocks along with each call, and ``rng`` is salted per submission in the hidden tests,
so their inputs are not the ones written in the cell.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import importlib.abc
import importlib.util
import inspect
import sys
import types
import warnings
from typing import Callable

import numpy as np

_array = np.array
_isfinite = np.isfinite
_unravel = np.unravel_index
_argmax = np.argmax


def _as_array(value, what):
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # torch tensor
        value = value.detach().cpu().numpy()
    try:
        arr = _array(value, dtype=np.float64)
    except (TypeError, ValueError):
        kind = getattr(value, "type_name", None) or type(value).__name__  # (wire.Unsupported: the original type)
        raise AssertionError(f"{what} should be numbers (an array or a float), got {kind}: "
                             f"{str(value)[:80]}") from None
    return arr


# float32 keeps 24 bits (unit roundoff 2**-24, about 6e-8); 1e-5 is about 170 of its roundings: room for the
# error of a computation of a few hundred operations, far below what separates a right answer from a wrong one.
FLOAT32 = 1e-5


def close(actual, expected, what="the answer", atol=1e-8, rtol=1e-8, *, count=None, float32=False, scale=None):
    """Assert that ``actual`` equals ``expected`` within atol + rtol·|expected|, with a message in words.

    Say what is compared rather than picking numbers:

    * ``count=n``: the answer is a fraction k/n of a count over n, so distinct answers differ by at least 1/n.
      Compared to a quarter of 1/n (atol 1/(4n), no rtol): k/n in any float type passes, (k ± 1)/n fails.
    * ``float32=True``: the prompt does not pin float64, so an answer computed in float32 is right. The
      tolerance becomes ``FLOAT32`` relative to each entry plus ``FLOAT32 * scale`` absolute, where ``scale``
      is the size of the numbers the computation handles: by default the largest ``|expected|`` (entries of
      one array share their rounding); pass it when the computation's intermediates are larger than its
      result (logits in the thousands), or ``scale=0`` where only relative error means anything (frequencies
      spanning decades, where an absolute 1e-5 would excuse every small one).
    """
    if actual is None:
        raise AssertionError(f"{what} is None: did the function forget to return its result?")
    a = _as_array(actual, what)
    e = _array(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"{what} should have shape {e.shape}, got shape {a.shape}")
    if not _isfinite(a).all():
        raise AssertionError(f"{what} contains NaN or inf")
    if not _isfinite(e).all():  # (a value the test derived from the notebook's answers: nothing equals it)
        raise AssertionError(f"{what}: the value it is compared with is NaN or inf (computed from the "
                             "notebook's other answers?)")
    if count is not None:
        atol, rtol = 0.25 / float(count), 0.0
    if float32:
        size = float(abs(e).max()) if scale is None and e.size else float(scale or 0.0)
        atol, rtol = max(atol, FLOAT32 * size), max(rtol, FLOAT32)
    err = abs(a - e) - (atol + rtol * abs(e))  # ndarray operators: nothing a notebook can rebind
    if a.size and float(err.max()) > 0:
        index = _unravel(int(_argmax(err)), e.shape) if e.ndim else ()
        where = what + (str([int(i) for i in index]) if index else '')
        raise AssertionError(f"{where} should be {float(e[index]):.10g}, got {float(a[index]):.10g}")


def rounded32(size, roundings=16):
    """The error of ``roundings`` float32 roundings (unit roundoff 2**-24) of numbers as large as ``size``: the
    ``atol`` for a float32 answer whose computation handles numbers larger than the answer itself (logits in the
    thousands move the weights of near-tied keys by their own rounding error)."""
    return roundings * 2.0 ** -24 * float(size)


def equal(actual, expected, what="the answer"):
    """Assert exact equality of integer arrays or scalars (ids, buckets, counts), with a message in words."""
    a = _as_array(actual, what)
    e = _array(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"{what} should have shape {e.shape}, got shape {a.shape}")
    wrong = a != e
    if wrong.any():
        index = _unravel(int(_argmax(wrong)), e.shape) if e.ndim else ()
        where = what + (str([int(i) for i in index]) if index else '')
        raise AssertionError(f"{where} should be {e[index]:g}, got {a[index]:g} "
                             f"({int(wrong.sum())} of {wrong.size} entries differ)")


@functools.lru_cache(maxsize=None)  # (a code object is immutable: one per function is enough)
def _blocked(qualname, n_freevars):
    """A code object that raises, with as many free variables as the function it replaces (Python requires it)."""
    names = [f"_free{i}" for i in range(n_freevars)]
    source = "def outer():\n" + "".join(f"    {n} = None\n" for n in names)
    source += "    def blocked(*args, **kwargs):\n"
    if names:
        source += f"        ({', '.join(names)},)\n"
    source += (f"        raise RuntimeError({qualname!r} + ' is the reference this exercise asks you to write "
               f"yourself; your code must not call it here')\n    return blocked\n")
    namespace = {}
    exec(source, namespace)
    return namespace["outer"]().__code__


def _resolve(path: str):
    """The object named by a dotted path (a module, or an attribute chain inside one): found from the longest
    prefix that is an imported module (posenc.attention is both a module and a function of posenc),
    importing only when that does not reach it (a failed import searches the whole path: milliseconds)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            try:
                return functools.reduce(getattr, parts[cut:], module)
            except AttributeError:
                break
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        return functools.reduce(getattr, parts[cut:], module)
    raise ImportError(f"no module for {path}")


def _unloaded_module(path: str) -> str | None:
    """The module that holds ``path`` when it is not imported yet, else None. Found without running it: the
    spec of the first missing module after the longest imported prefix (whose parent is imported)."""
    parts = path.split(".")
    cut = max((c for c in range(1, len(parts) + 1) if ".".join(parts[:c]) in sys.modules), default=0)
    if cut == 0 or cut == len(parts):
        return None
    try:
        functools.reduce(getattr, parts[cut:], sys.modules[".".join(parts[:cut])])
        return None  # reachable from what is imported: an attribute, not a missing module
    except AttributeError:
        pass
    name = ".".join(parts[: cut + 1])
    try:
        return name if importlib.util.find_spec(name) is not None else None
    except (ImportError, ValueError):
        return None


class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses to import the modules that hold a blocked reference, while a ``blocked`` block runs."""

    def __init__(self, modules: dict[str, str]):
        self.modules = modules  # module name -> the blocked reference it holds

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.modules:
            raise RuntimeError(f"{self.modules[fullname]} is the reference this exercise asks you to write "
                               "yourself; your code must not call it here")
        return None


def path_of(ref) -> str:
    """The dotted path of a posenc function, class or module (a string is one already)."""
    if isinstance(ref, str):
        return ref
    return ref.__name__ if isinstance(ref, types.ModuleType) else f"{ref.__module__}.{ref.__qualname__}"


@contextlib.contextmanager
def blocked(*references):
    """Make posenc functions, classes or whole modules raise while the block runs, where the student's code
    runs (the notebook's kernel).

    Swaps the code of each function object, so the block catches every way of reaching it: ``posenc.f``,
    ``from posenc import f as g`` done earlier, a method of a class. Restored on exit. A reference may also be
    a dotted path (``"posenc.relative_torch.RelativePositionBias"``): one in a module nobody has imported yet
    (a torch module posenc loads on first use) is not imported to be blocked, which would cost the import of
    torch: importing its module is refused instead while the block runs."""
    targets, refused = {}, {}
    for ref in references:
        if isinstance(ref, str):
            module = _unloaded_module(ref)
            if module is not None:
                refused[module] = ref
                continue
            ref = _resolve(ref)
        if isinstance(ref, types.ModuleType):
            members = {f"{ref.__name__}.{n}": f for n, f in vars(ref).items()
                       if isinstance(f, types.FunctionType) and f.__module__ == ref.__name__}
        elif inspect.isclass(ref):
            members = {f"{ref.__qualname__}.{n}": f for n, f in vars(ref).items() if isinstance(f, types.FunctionType)}
        elif isinstance(ref, types.FunctionType):
            members = {f"posenc.{ref.__name__}": ref}
        else:
            raise TypeError(f"without() takes posenc functions, classes or modules, got {ref!r}")
        targets.update(members)
    saved = {name: fn.__code__ for name, fn in targets.items()}
    refuse = _Refuse(refused)
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
    """Show warnings on stdout from now on. nbgrader's Validate counts anything a test cell writes to stderr
    as a failed test, and a warning is not one (numpy warns about log(0) on a branch np.where throws away)."""
    def show(message, category, filename, lineno, file=None, line=None):
        sys.stdout.write(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = show


@dataclasses.dataclass
class Grading:
    """What the grading process hands a test cell it runs (``autograder.verdict``): ``ship`` turns a
    ``@kernel`` function into a stand-in that runs it in the student's kernel, ``each`` runs a function on
    many cases in one request, ``salt`` seeds the hidden tests' cases (None in the visible tests), and
    ``blocked`` lists the dotted paths the open ``without`` blocks name (sent along with each call)."""
    ship: Callable
    each: Callable
    salt: int | None = None
    blocked: list = dataclasses.field(default_factory=list)

    def blocked_now(self) -> list[str]:
        return sorted({path for paths in self.blocked for path in paths})


class Checks:
    """The helpers a test cell reads as ``checks``: in the notebook, the module's own (``grading`` None, the
    student's code called directly); while autograding, one bound to the grader's ``Grading`` context."""

    FLOAT32 = FLOAT32
    close, equal, rounded32 = staticmethod(close), staticmethod(equal), staticmethod(rounded32)
    warnings_on_stdout = staticmethod(warnings_on_stdout)

    def __init__(self, grading: Grading | None = None):
        self.grading = grading

    def rng(self, seed):
        """The random generator tests draw their cases from: seeded with ``seed`` alone in the notebook and the
        visible tests (the same cases every time); in the hidden tests while grading, with ``seed`` and a salt
        secret to the grader and fixed per submission, so the hidden cases are not the ones written in the
        cell, and re-grading repeats them."""
        salt = None if self.grading is None else self.grading.salt
        return np.random.default_rng(seed if salt is None else [seed, salt])

    def kernel(self, function):
        """Mark a function of a test cell that must run where the student's code runs (it builds the student's
        objects, calls their methods, or spies on what their code calls) and returns only values: arrays,
        numbers, strings, lists, tuples, dicts. In the notebook it is the function itself. While grading, its
        source is sent into the student's kernel, run there, and what it returns is checked in the grading
        process: keep the checks outside such functions."""
        return function if self.grading is None else self.grading.ship(function)

    @contextlib.contextmanager
    def without(self, *references):
        """Make posenc's references (functions, classes, modules or dotted paths) raise while the block's calls
        of the student's code run (``blocked``)."""
        if self.grading is None:
            with blocked(*references):
                yield
            return
        self.grading.blocked.append([path_of(ref) for ref in references])
        try:
            yield
        finally:
            self.grading.blocked.pop()

    def each(self, function, cases) -> list:
        """``[function(*case) for case in cases]``, each case a tuple of positional arguments: the student's
        function on every case of a test. While grading, the student's kernel gets every case in one request
        (one round trip instead of one per case); the results come back as values, checked here."""
        cases = [tuple(case) for case in cases]
        if self.grading is not None:
            return self.grading.each(function, cases)
        return [function(*case) for case in cases]

    def each_case(self, function, cases, judge, *, call=None, calls=None, blocked=(), name=None) -> None:
        """The hidden-test pattern in one call: the student's ``function`` on every case, all in one request to
        the kernel (``each``), with ``blocked`` references blocked while it runs (``without``); then, here,
        ``judge(*case, result)`` on each case in order, which compares the result with posenc's and raises
        AssertionError in words. The first failure is raised again with its case named first: ``name(*case)``,
        or "case 3 of 20". ``cases`` are tuples (drawn from ``rng``); the student's function gets ``case``
        itself, or ``call(*case)`` where a case carries more than the call (an expected value computed
        beforehand). Where a case is judged on several calls (a property: R(a) R(b) = R(a + b)),
        ``calls(*case)`` lists them and the judge gets their results as a list.

            r = checks.rng(1001)
            cases = [(r.normal(size=(3, 4)), r.normal(size=(5, 4))) for _ in range(20)]

            def judge(q, k, answer):
                checks.close(answer, posenc.attention(q, k, k), f"q {q.shape}, k {k.shape}")

            checks.each_case(my_attention, cases, judge, blocked=(posenc.attention,))
        """
        if call is not None and calls is not None:
            raise TypeError("each_case takes call or calls, not both")
        cases = [tuple(case) for case in cases]
        if calls is None:
            grouped = [[case if call is None else tuple(call(*case))] for case in cases]
        else:
            grouped = [[tuple(c) for c in calls(*case)] for case in cases]
        flat = [c for group in grouped for c in group]
        with self.without(*blocked):
            results = self.each(function, flat)
        if len(results) != len(flat):  # the grading process checks this too; a notebook's own run lands here
            raise AssertionError(f"{len(results)} results for {len(flat)} calls")
        start = 0
        for index, (case, group) in enumerate(zip(cases, grouped, strict=True)):
            got = results[start:start + len(group)]
            start += len(group)
            try:
                judge(*case, got if calls is not None else got[0])
            except AssertionError as err:
                where = name(*case) if name is not None else f"case {index + 1} of {len(cases)}"
                raise AssertionError(f"{where}: {err}") from None


_NOTEBOOK = Checks()  # the notebook's own: the student's code called directly
rng, kernel, without, each, each_case = (_NOTEBOOK.rng, _NOTEBOOK.kernel, _NOTEBOOK.without, _NOTEBOOK.each,
                                         _NOTEBOOK.each_case)
