"""What ``python -m autograder scan`` lists and ``grade`` notes: code that can reach posenc's reference around
the block on it (``checks.blocked``: each reason below is a way round it), and uses of posenc. Hooks, patches of
numpy, exits and threads are no findings: no test runs in the kernel, and a thread sees only inputs already answered.
"""

from __future__ import annotations

import ast
import collections
import functools
import importlib.util
import re
import sys
import unicodedata
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

from . import course
from .sandbox import KERNEL_MODULES

RUNS = "runs code from text, a file, a pickle or a name made at run time: a copy of posenc's source runs unblocked"
PROCESS = "starts another process or program: posenc is not blocked there"
IMPORTS = "changes what an import gives (sys.modules, sys.path, import hooks): posenc loads afresh, unblocked"
FRAMES = "reaches frames, the garbage collector or raw memory: the block keeps the reference's code there"
INTERNALS = "reaches Python's internals: code objects, a function's globals, the builtins"
COMPUTED = "reaches attributes or names by a computed name or as a dict: the scan cannot tell which"
AGENT = "reaches IPython, the kernel's comms or autograder: the grader's agent in the kernel applies the block"
PATCH = "replaces part of posenc, autograder or a module the block uses: the block then swaps a stand-in"
LOCAL = "imports a module neither in the standard library nor installed: a file beside the notebook (posenc's copy?)"
MAGIC = "runs an IPython magic that can run code or programs"
USES_POSENC = "uses posenc in a cell the student wrote or changed (fine only if the exercise allows it)"
TEXT_ONLY = "(checked by text only)"


class _Reasons(tuple):
    """``message in AROUND_THE_REFERENCE``: whether a finding's message gives one of these reasons."""

    def __contains__(self, message) -> bool:
        return isinstance(message, str) and message.startswith(self)


# What `grade` puts in the notes column: every reason but a use of posenc and what was read as text.
AROUND_THE_REFERENCE = _Reasons((RUNS, PROCESS, IMPORTS, FRAMES, INTERNALS, COMPUTED, AGENT, PATCH, LOCAL, MAGIC))


def _table(*pairs: tuple[str, str]) -> dict[str, str]:
    return {word: reason for reason, words in pairs for word in words.split()}


# Modules, by the first part of a dotted name; builtins, by their bare name; attributes, whatever they are read from.
MODULES = _table((RUNS, "importlib imp runpy pkgutil pydoc zipimport site code codeop timeit doctest pdb bdb "
                        "cProfile profile trace marshal pickle _pickle shelve copyreg dill cloudpickle joblib"),
                 (PROCESS, "subprocess _posixsubprocess multiprocessing concurrent pty"),
                 (FRAMES, "gc ctypes _ctypes cffi mmap inspect traceback"), (INTERNALS, "builtins"),
                 (PATCH, "unittest mock"), (AGENT, "IPython ipykernel comm zmq jupyter_client autograder"))
BUILTINS = _table((RUNS, "exec eval compile"), (COMPUTED, "vars globals locals"), (AGENT, "get_ipython"))
ATTRIBUTES = _table(
    (PROCESS, "system popen fork forkpty fork_exec spawn posix_spawn posix_spawnp getoutput getstatusoutput "
              "startfile create_subprocess_exec create_subprocess_shell "
              + " ".join(p + s for p in ("exec", "spawn") for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe"))),
    (IMPORTS, "modules meta_path path_hooks path_importer_cache"),
    (FRAMES, "_getframe _current_frames currentframe settrace setprofile monitoring f_back f_locals f_globals "
             "f_builtins f_code tb_frame tb_next gi_frame gi_code cr_frame ag_frame ctypeslib"),
    (INTERNALS, "FunctionType CodeType ModuleType LambdaType"), (COMPUTED, "attrgetter methodcaller"),
    (PATCH, "update_wrapper wraps"), (AGENT, "comm_manager get_comm_manager"))
ORDINARY_DUNDERS = {"__name__", "__qualname__", "__doc__", "__version__", "__main__", "__future__"}  # else INTERNALS
# Modules whose objects the block or the agent reads while a call runs ("checks": the name lessons import it as).
BLOCK_MODULES = {"posenc", "autograder", "checks", "sys", "builtins", "types", "inspect", "importlib", "functools",
                 "contextlib", "IPython", "ipykernel", "comm"}
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,  # what a name's binding belongs to
          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
MAGIC_CALLS = ("run_line_magic", "run_cell_magic")  # what IPython makes of `%name line` and `%%name line\nbody`
QUIET_MAGICS = {"matplotlib", "time", "timeit", "capture", "pinfo", "pinfo2"}  # the Python they run is scanned
SAFE_KEYWORDS = {"allow_pickle": False, "weights_only": True}  # np.load, torch.load: any other value unpickles


@functools.lru_cache(maxsize=1)
def block_names() -> frozenset[str]:
    """The names the block looks up or an agent call goes through: every function, class and method that posenc
    and the kernel's autograder modules define. Rebinding one is PATCH, on any object but one ``__init__`` makes."""
    paths = [*(course.ROOT / "posenc").rglob("*.py"), *(course.ROOT / f"autograder/{m}.py" for m in KERNEL_MODULES)]
    return frozenset(node.name for path in paths for node in ast.walk(ast.parse(path.read_text()))
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


def _installed(top: str) -> bool:
    """Whether a kernel imports ``top`` from the standard library or the environment, not the student's folder."""
    if top in sys.stdlib_module_names or top in BLOCK_MODULES:
        return True
    try:
        spec = importlib.util.find_spec(top)  # (a top-level name: nothing runs)
    except (ImportError, ValueError):
        return False
    where = spec and (spec.origin or next(iter(spec.submodule_search_locations or ()), None))
    roots = [Path(prefix).resolve() for prefix in (sys.prefix, sys.base_prefix)]
    return bool(where) and any(Path(where).resolve().is_relative_to(root) for root in roots)


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__") and name not in ORDINARY_DUNDERS


def _word(word: str) -> str | None:
    """The reason a listed word gives, wherever it stands."""
    return MODULES.get(word) or BUILTINS.get(word) or ATTRIBUTES.get(word) or (INTERNALS if _dunder(word) else None)


def _words(source: str) -> set[tuple[int, str]]:
    """(line, message) for each listed word, use of posenc, magic and shell line in code read as text."""
    lines = list(enumerate(source.splitlines(), start=1))  # (a magic: one starts a line, or follows options)
    magics = {(n, f"{MAGIC} ({c.strip()})") for n, text in lines
              for c in re.findall(r"^\s*[%!]|(?<!\S)[%!](?=\w)", text)}
    return magics | {(n, f"{_word(w) or USES_POSENC} ({w})") for n, text in lines for w in re.findall(r"\w+", text)
                     if _word(w) or w == "posenc"}


def scan_source(source: str, depth: int = 0) -> list[tuple[int, str]]:
    """(line, message) for each finding in one cell's code as IPython runs it (magics become calls on get_ipython()).
    Never raises: a cell Python cannot parse is read as text, its findings TEXT_ONLY (the kernel cannot run it
    either); but not at ``depth`` 1, the code a magic runs (`%timeit -n1 code` parses as text only)."""
    try:
        code = TransformerManager().transform_cell(source)
    except Exception:  # a cell IPython cannot tokenize: read as plain Python
        code = source
    # the lines IPython rewrote: a get_ipython() there is IPython's, unless the line had one (NFKC, as Python reads)
    before = source.splitlines() + [""] * len(code.splitlines())
    rewritten = {n for n, (was, now) in enumerate(zip(before, code.splitlines()), 1)
                 if was != now and "get_ipython" not in unicodedata.normalize("NFKC", was)}
    try:
        cell = _Cell(ast.parse(code), rewritten, depth)
        return sorted({(getattr(node, "lineno", 1), message) for node in cell.nodes
                       for message in getattr(cell, type(node).__name__, lambda _: ())(node)})
    except (SyntaxError, RecursionError, MemoryError, ValueError) as exc:  # (too deep or too large, too)
        found = {(getattr(exc, "lineno", None) or 1, f"does not parse as Python {TEXT_ONLY}")}
    return sorted(_words(source) if depth else found | {(n, f"{TEXT_ONLY} {m}") for n, m in _words(source)})


class _Cell:
    """One parsed cell: what its names stand for, and a check for each kind of node (named after it)."""

    def __init__(self, tree, rewritten: set[int], depth: int):
        self.rewritten, self.depth = rewritten, depth
        self.nodes = nodes = list(ast.walk(tree))
        self.parent = {child: node for node in nodes for child in ast.iter_child_nodes(node)}
        imports = [(node, a) for node in nodes if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names]
        self.imported = {a.asname or a.name.split(".")[0]: f"{n.module}.{a.name}" if isinstance(n, ast.ImportFrom)
                         else a.name if a.asname else a.name.split(".")[0] for n, a in imports}
        bound = [n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)]
        bound += [n.arg for n in nodes if isinstance(n, ast.arg)]
        bound += [n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        self.local = set(bound) - set(self.imported)  # a variable `code` is not the module code

    def module_of(self, node) -> str:
        """The module a name stands for (its import, else itself); "" for what is not a name."""
        return self.imported.get(node.id, node.id).split(".")[0] if isinstance(node, ast.Name) else ""

    def is_call_of(self, node) -> bool:
        up = self.parent.get(node)
        return isinstance(up, ast.Call) and up.func is node

    def making(self, node, root) -> bool:
        """Whether ``root`` is the object a method ``__init__`` is making, where ``node`` stands (its first
        parameter, never rebound: a class's instances are the only objects Python hands it)."""
        while node in self.parent and not isinstance(node, SCOPES):
            node = self.parent[node]
        return (getattr(node, "name", "") == "__init__" and isinstance(self.parent.get(node), ast.ClassDef)
                and [a.arg for a in node.args.args][:1] == [root.id]
                and not any(isinstance(n, ast.Name) and n.id == root.id and not isinstance(n.ctx, ast.Load)
                            for n in ast.walk(node)))

    def replaces(self, node, target, name: str):
        """PATCH where ``target.name`` is rebound: on a module the block uses, on what is not a plain name, or a name
        the block looks up, anywhere but on the object an ``__init__`` is making."""
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if self.module_of(root) in BLOCK_MODULES or not isinstance(root, ast.Name) or (
                name in block_names() and not self.making(node, root)):
            yield f"{PATCH} ({name} = ...)"

    def Import(self, node):
        for a in node.names:
            parts = (f"{getattr(node, 'module', None) or ''}.{a.name}").strip(".").split(".")
            yield from (f"{_word(p)} ({p})" for p in parts if (_word(p) if p != parts[0] else MODULES.get(p)))
            yield from [f"{IMPORTS} (sys.path)"] * (parts[:2] == ["sys", "path"])
            yield from [f"{LOCAL} ({'.'.join(parts)})"] * bool(getattr(node, "level", 0) or not _installed(parts[0]))
            yield from [USES_POSENC] * (parts[0] == "posenc")

    ImportFrom = Import

    def Name(self, node):
        up, name = self.parent.get(node), node.id
        if _dunder(name):
            yield f"{INTERNALS} ({name})"
        if name == "posenc" and isinstance(node.ctx, ast.Load):
            yield USES_POSENC
        if name in self.local:
            return
        if self.module_of(node) in MODULES:
            yield f"{MODULES[self.module_of(node)]} ({name})"
        if name in BUILTINS and not (name == "get_ipython" and node.lineno in self.rewritten):
            yield f"{BUILTINS[name]} ({name})"
        if name in ("getattr", "setattr", "delattr"):
            literal = self.is_call_of(node) and len(up.args) >= 2 and isinstance(getattr(up.args[1], "value", 0), str)
            yield from [f"{COMPUTED} ({name})"] * (not literal)
            yield from self.replaces(up, up.args[0], up.args[1].value) if literal and name != "getattr" else ()
        if (self.module_of(node) in BLOCK_MODULES and isinstance(node.ctx, ast.Load)
                and not isinstance(up, ast.Attribute) and not self.is_call_of(node)):
            yield f"{PATCH} ({name} handed on as a value)"

    def Attribute(self, node):
        if node.attr in ATTRIBUTES and not (node.attr == "modules" and self.is_call_of(node)):  # (torch's .modules())
            yield f"{ATTRIBUTES[node.attr]} ({node.attr})"
        if _dunder(node.attr) and not (node.attr == "__init__" and isinstance(node.value, ast.Call)
                                       and getattr(node.value.func, "id", "") == "super" and not node.value.args):
            yield f"{INTERNALS} ({node.attr})"
        inner = getattr(node.value, "id", getattr(node.value, "attr", ""))
        if node.attr == "path" and self.imported.get(inner, inner).split(".")[-1] == "sys":
            yield f"{IMPORTS} (sys.path)"
        if not isinstance(node.ctx, ast.Load):
            yield from self.replaces(node, node, node.attr)

    def Constant(self, node):
        magic = getattr(getattr(self.parent.get(node), "func", None), "attr", "") in MAGIC_CALLS
        if not isinstance(node.value, str) or magic:  # (what a magic is given is scanned as code)
            return
        words = re.split(r"[.:/]+", node.value) if re.fullmatch(r"[\w.:/]+", node.value) else []
        yield from (f"{_word(w)} (named in a string: {node.value[:60]!r})" for w in words if _word(w))
        yield from [f"{FRAMES} (/proc/)"] * ("/proc/" in node.value)

    def keyword(self, node):
        if node.arg in SAFE_KEYWORDS and getattr(node.value, "value", None) is not SAFE_KEYWORDS[node.arg]:
            yield f"{RUNS} ({node.arg}=...)"

    def Call(self, node):
        """A magic (``%run``, ``%%bash``), and the code it is given, scanned as the magic's lines."""
        texts = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else "" for a in node.args]
        if getattr(node.func, "attr", "") not in MAGIC_CALLS or not texts or not texts[0]:
            return
        if texts[0] not in QUIET_MAGICS or self.depth:  # (a magic in a magic's code: no honest cell has one)
            yield f"{MAGIC} (%{texts[0] if texts[0].isidentifier() else repr(texts[0][:60])})"
        for text in texts[1:3]:  # the magic's line, a cell magic's body
            yield from (m for _, m in (_words(text) if self.depth else scan_source(text, depth=1)))


Finding = collections.namedtuple("Finding", "student assignment cell line message")


def scan_notebook(path: Path, student: str, assignment: str) -> list[Finding]:
    """Findings in every code cell of a handed-in notebook that is not, byte for byte, a code cell of the
    released lesson (never chosen by metadata or ids); a cell is named by its position and claimed grade_id."""
    released = course.lesson_notebook(assignment)
    lesson = {c.source for c in nbformat.read(released, as_version=4).cells if c.cell_type == "code"} \
        if released.exists() else ()
    found = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type == "code" and cell.source not in lesson:
            grade_id = re.sub(r"[^A-Za-z0-9_.-]", "?", str(course.grade_id(cell) or ""))[:60]
            label = f"cell {index}" + (f" ({grade_id})" if grade_id else "")
            found += [Finding(student, assignment, label, line, m) for line, m in scan_source(cell.source)]
    return found
