"""``python -m autograder scan SUBMISSIONS``: read the code students wrote and list what looks like an attempt
to get around the tests, for the instructor to look at.

nbgrader restores the locked cells and the tests in autograder/checks.py refuse to run when numpy's,
math's or posenc's functions were replaced, but student code runs in the same Python process as the tests:
code that rebinds the name ``checks``, rewrites that module, re-creates posenc's functions, or writes to
files can still fool an in-process test. Those are rare and visible in the source, so this scan finds
them. It reads only the cells a student changed or added (a cell whose id and source are those of the
lesson is skipped) and reports findings, not verdicts: a use of ``posenc`` in a solution cell may be
allowed by the exercise.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from . import course

# Names the tests rely on: rebinding them in the notebook changes what the test cells call.
TRUSTED_NAMES = {"np", "numpy", "math", "posenc", "checks", "torch", "autograder"}
# Modules whose attributes a solution should never assign to.
LIBRARY_ROOTS = TRUSTED_NAMES | {"sys", "builtins", "os", "importlib", "nbgrader", "scipy", "types", "inspect"}
_GENUINE = {"np": "numpy", "numpy": "numpy", "math": "math", "posenc": "posenc", "torch": "torch",
            "checks": "autograder.checks", "autograder": "autograder"}
SUSPICIOUS_NAMES = {
    "__code__": "reads or swaps a function's code object",
    "__globals__": "reaches into a function's globals",
    "__builtins__": "touches the builtins",
    "__dict__": "edits an object's attributes directly",
    "__class__": "changes an object's class",
    "__setattr__": "sets attributes through __setattr__",
    "sys.modules": "reaches modules through sys.modules",
    "importlib": "re-imports or reloads modules",
    "reload": "reloads a module",
    "exec": "runs code from a string",
    "eval": "evaluates code from a string",
    "compile": "compiles code from a string",
    "ctypes": "uses ctypes",
    "gc": "walks the garbage collector's objects",
    "inspect": "inspects source or frames",
    "builtins": "touches the builtins module",
    "setattr": "sets attributes by name",
    "delattr": "deletes attributes by name",
    "globals": "edits the notebook's globals",
    "os._exit": "kills the kernel (os._exit)",
    "sys.exit": "exits (sys.exit)",
    "exit": "exits (exit)",
    "quit": "exits (quit)",
    "os.kill": "sends a signal to a process",
    "signal": "handles signals",
    "subprocess": "starts programs",
    "os.system": "starts programs",
    "sqlite3": "opens an SQLite database (the gradebook?)",
    "socket": "opens network connections",
    "urllib": "opens network connections",
    "requests": "opens network connections",
    "shutil": "copies or deletes files",
    "open": "opens files",
    "KeyboardInterrupt": "catches KeyboardInterrupt (defeats the timeout's interrupt)",
}


_BUILTINS = {"exec", "eval", "compile", "globals", "setattr", "delattr", "exit", "quit", "open", "reload",
             "KeyboardInterrupt"}


@dataclass
class Finding:
    student: str
    assignment: str
    cell: str
    line: int
    message: str


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Subscript):
        inner = _dotted(node.value)
        return None if inner is None else inner + "[...]" + ("." + ".".join(reversed(parts)) if parts else "")
    return None


def _root(dotted: str) -> str:
    return re.split(r"[.\[]", dotted, maxsplit=1)[0]


def scan_source(source: str, solution_cell: bool) -> list[tuple[int, str]]:
    """(line, message) for each suspicious construct in one cell's code."""
    found = []
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        found.append((exc.lineno or 1, "does not parse as Python (checked by text only)"))
        for word, message in SUSPICIOUS_NAMES.items():
            if re.search(r"\b" + re.escape(word) + r"\b", source):
                found.append((1, message))
        return found

    def add(node, message):
        item = (getattr(node, "lineno", 1), message)
        if item not in found:
            found.append(item)

    # Other names for the libraries: `from autograder import checks as c`, `import numpy.testing as npt`.
    roots = set(LIBRARY_ROOTS)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                module = alias.name if isinstance(node, ast.Import) else f"{node.module or ''}.{alias.name}"
                if alias.asname and module.split(".")[0] in LIBRARY_ROOTS:
                    roots.add(alias.asname)

    for node in ast.walk(tree):
        # Assignments to attributes of library modules: numpy.allclose = ..., checks.close = ...
        targets = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        while targets:
            t = targets.pop()
            if isinstance(t, (ast.Tuple, ast.List)):
                targets += t.elts
            elif isinstance(t, ast.Starred):
                targets.append(t.value)
            elif isinstance(t, (ast.Attribute, ast.Subscript)):
                name = _dotted(t)
                if name and _root(name) in roots:
                    add(node, f"assigns to {name}: replaces part of a library the tests rely on")
        # Rebinding a trusted name: posenc = ..., for np in ..., def checks(): ..., import x as np
        bound = []
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                as_name = alias.asname or alias.name.split(".")[0]
                real = alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
                if isinstance(node, ast.Import) and alias.asname is None:
                    real = alias.name.split(".")[0]  # `import numpy.testing` binds numpy itself
                if as_name in TRUSTED_NAMES and real != _GENUINE[as_name]:
                    add(node, f"imports {real} under the name {as_name}, which the test cells use")
        for name in bound:
            if name in TRUSTED_NAMES:
                add(node, f"rebinds the name {name}, which the test cells use")
        # Calls and names worth a look.
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = _dotted(node)
            if name:
                for word, message in SUSPICIOUS_NAMES.items():
                    if word.startswith("__"):
                        hit = name.endswith("." + word)      # an attribute: f.__code__
                    elif "." in word:
                        hit = name == word or name.startswith(word + ".")  # os._exit, sys.modules[...]
                    elif word in _BUILTINS:
                        hit = name == word and isinstance(node, ast.Name)  # exec(...), not re.compile
                    else:
                        hit = _root(name) == word            # a module: importlib.reload, ctypes.memmove
                    if hit:
                        add(node, message)
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            name = _dotted(node.type) or ""
            if "KeyboardInterrupt" in name or "BaseException" in name:
                add(node, "catches KeyboardInterrupt (defeats the timeout's interrupt)")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                module = alias.name if isinstance(node, ast.Import) else (node.module or "")
                for word, message in SUSPICIOUS_NAMES.items():
                    if module == word or module.startswith(word + "."):
                        add(node, message)
        if solution_cell and isinstance(node, ast.Name) and node.id == "posenc" and isinstance(node.ctx, ast.Load):
            add(node, "uses posenc in a solution cell (fine only if the exercise allows it)")
    return sorted(found)


def _lesson_cells(assignment: str) -> dict[str, str]:
    import nbformat

    path = course.LESSONS / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return {}
    nb = nbformat.read(path, as_version=4)
    return {cell.get("id"): cell.source for cell in nb.cells if cell.get("id")}


def _locked_ids(assignment: str) -> set[str]:
    import nbformat

    nb = nbformat.read(course.SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    return {c.metadata["nbgrader"]["grade_id"] for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("locked") and c.metadata["nbgrader"].get("grade_id")}


def scan_notebook(path: Path, student: str, assignment: str) -> list[Finding]:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    lesson = _lesson_cells(assignment)
    locked = _locked_ids(assignment)
    findings = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if grade_id in locked:
            continue  # nbgrader puts the instructor's version back before grading
        if lesson.get(cell.get("id")) == cell.source:
            continue  # the lesson's own code, unchanged
        where = grade_id or f"cell {index}"
        for line, message in scan_source(cell.source, solution_cell=bool(meta.get("solution"))):
            findings.append(Finding(student, assignment, where, line, message))
    return findings


def scan(folder: Path) -> tuple[list[Finding], list[str]]:
    """Findings for every readable submission under folder (<student>/<chapter>/<chapter>.ipynb)."""
    from .grading import find_submissions

    submissions, errors = find_submissions(Path(folder))
    findings = []
    for sub in submissions:
        findings += scan_notebook(sub.notebook, sub.student, sub.assignment)
    return findings, errors


def format_findings(findings: list[Finding]) -> str:
    if not findings:
        return "no findings"
    rows = [("student", "chapter", "cell", "line", "finding")]
    rows += [(f.student, f.assignment, f.cell, str(f.line), f.message) for f in findings]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows)
