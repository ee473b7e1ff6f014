"""What ``python -m autograder scan SUBMISSIONS`` looks for: read the code students wrote and list what looks like
an attempt to get around the tests, for the instructor to look at (the command is autograder/commands/scan.py).

nbgrader restores the locked cells and the tests in autograder/checks.py refuse to run when numpy's,
math's or posenc's functions were replaced, but student code runs in the same Python process as the tests:
code that rebinds the name ``checks``, rewrites that module, re-creates posenc's functions, or writes to
files can still fool an in-process test. Those are rare and visible in the source, so this scan finds
them, along with the hooks that change how later cells run (IPython's input and AST transformers, event
callbacks, trace functions, signal handlers, threads). It reads every code cell that is not, byte for byte,
a code cell of the released lesson (never trusting the cell's nbgrader metadata, which the student can
edit) and reports findings, not verdicts: a use of ``posenc`` in a solution cell may be allowed by the
exercise.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from . import course

# Names the tests rely on: rebinding them in the notebook changes what the test cells call.
TRUSTED_NAMES = {"np", "numpy", "math", "posenc", "checks", "torch", "autograder"}
# Modules whose attributes a solution should never assign to.
LIBRARY_ROOTS = TRUSTED_NAMES | {"sys", "builtins", "os", "importlib", "nbgrader", "scipy", "types", "inspect"}
_GENUINE = {"np": "numpy", "numpy": "numpy", "math": "math", "posenc": "posenc", "torch": "torch",
            "checks": "autograder.checks", "autograder": "autograder"}
# What the scan looks for, by the way it shows in code; each finding says in words what the construct can do.
# Modules a solution has no reason to use: flagged where they are imported and where a name reaches them.
MODULES = {
    "importlib": "re-imports or reloads modules (importlib)",
    "ctypes": "uses ctypes (raw memory)",
    "gc": "walks the garbage collector's objects",
    "inspect": "inspects source or frames",
    "builtins": "touches the builtins module",
    "signal": "handles signals (signal)",
    "subprocess": "starts programs",
    "sqlite3": "opens an SQLite database (the gradebook?)",
    "socket": "opens network connections",
    "urllib": "opens network connections",
    "requests": "opens network connections",
    "http": "opens network connections",
    "shutil": "copies or deletes files",
    "threading": "starts threads (threading): code that goes on running while the tests run",
    "_thread": "starts threads (_thread): code that goes on running while the tests run",
    "concurrent": "runs code in a pool of threads or processes (concurrent.futures)",
    "multiprocessing": "starts processes (multiprocessing)",
    "asyncio": "schedules code on the kernel's event loop (asyncio): it can run between or during later cells",
    "atexit": "registers code to run at the kernel's shutdown (atexit)",
    "runpy": "runs a module or file as code (runpy)",
    "marshal": "loads code objects from bytes (marshal)",
    "pdb": "uses the debugger: it can trace every line the tests run",
    "bdb": "uses the debugger: it can trace every line the tests run",
    "IPython": "uses IPython's internals (IPython): they can change how every later cell runs",
    "ipykernel": "uses the kernel's internals (ipykernel)",
    "comm": "uses Jupyter comms (comm): the channel the grader asks the notebook's functions through",
}
# Members of modules, said more precisely than their module's line: `signal.signal`, `sys.modules[...]`.
MEMBERS = {
    "os._exit": "kills the kernel (os._exit)",
    "sys.exit": "exits (sys.exit)",
    "os.kill": "sends a signal to a process",
    "os.system": "starts programs",
    "os.popen": "starts programs",
    "os.fork": "forks the kernel's process (os.fork)",
    "sys.modules": "reaches modules through sys.modules",
    "sys.meta_path": "installs an import hook (sys.meta_path): later imports can get other modules",
    "sys.path_hooks": "installs an import hook (sys.path_hooks): later imports can get other modules",
    "sys.path": "changes where modules are imported from (sys.path)",
    "sys.monitoring": "installs monitoring callbacks (sys.monitoring): they see every line the tests run",
    "sys.addaudithook": "installs an audit hook (sys.addaudithook)",
    "sys._getframe": "walks the call stack's frames: it can reach the tests' variables",
    "signal.signal": "installs a signal handler (signal.signal): it can swallow the timeout's interrupt",
    "signal.setitimer": "sets a timer signal (signal.setitimer): it interrupts whatever runs later, the tests too",
    "signal.alarm": "sets an alarm signal (signal.alarm): it interrupts whatever runs later, the tests too",
    "signal.pthread_sigmask": "blocks signals (signal.pthread_sigmask): the timeout's interrupt may never arrive",
    "types.FunctionType": "builds a function from a code object (types.FunctionType)",
    "types.CodeType": "builds a code object (types.CodeType)",
}
# Builtins, used by their bare name (`exec(...)`, not `re.compile(...)`).
BUILTIN_NAMES = {
    "exec": "runs code from a string (exec)",
    "eval": "evaluates code from a string (eval)",
    "compile": "compiles code from a string (compile)",
    "__import__": "imports a module by a name computed at run time (__import__)",
    "get_ipython": "reaches the IPython shell (get_ipython()): it can change how every later cell runs, the tests too",
    "globals": "edits the notebook's globals",
    "setattr": "sets attributes by name",
    "delattr": "deletes attributes by name",
    "exit": "exits (exit)",
    "quit": "exits (quit)",
    "open": "opens files",
    "reload": "reloads a module",
    "KeyboardInterrupt": "catches KeyboardInterrupt (defeats the timeout's interrupt)",
}
# Attributes, whatever object they are read from: Python's object internals and the hooks of sys and IPython.
# They are matched on the attribute itself because `get_ipython().events.register` reaches them through a
# call, which no dotted name follows, and `ip = get_ipython()` hides where they come from.
ATTRIBUTES = {
    "__code__": "reads or swaps a function's code object",
    "__globals__": "reaches into a function's globals",
    "__builtins__": "touches the builtins",
    "__dict__": "edits an object's attributes directly",
    "__class__": "changes an object's class",
    "__setattr__": "sets attributes through __setattr__",
    "__subclasses__": "walks a class's subclasses (a way to reach any object)",
    "f_globals": "walks the call stack's frames: it can reach the tests' variables",
    "f_locals": "walks the call stack's frames: it can reach the tests' variables",
    "f_back": "walks the call stack's frames: it can reach the tests' variables",
    "settrace": "installs a trace function (settrace): it sees and can change every line the tests run",
    "setprofile": "installs a profile function (setprofile): it sees every call the tests make",
    "excepthook": "replaces the exception hook (excepthook): it can hide the tests' failures",
    "displayhook": "replaces the display hook (displayhook): it decides what a cell's result shows",
    "input_transformers_cleanup": "registers an IPython input transformer (input_transformers_cleanup): it "
                                  "rewrites the code of every later cell, the tests too",
    "input_transformers_post": "registers an IPython input transformer (input_transformers_post): it rewrites "
                               "the code of every later cell, the tests too",
    "input_transformer_manager": "reaches IPython's input transformers: they rewrite the code of every later cell",
    "ast_transformers": "registers an IPython AST transformer (ast_transformers): it rewrites the code of every "
                        "later cell, the tests too",
    "set_custom_exc": "installs an IPython exception handler (set_custom_exc): it can hide the tests' failures",
    "events.register": "registers an IPython event callback (events.register): it runs around every later cell",
    "showtraceback": "replaces or calls IPython's traceback display (showtraceback): it can hide the tests' failures",
    "display_pub": "reaches IPython's display publisher (display_pub): it decides what every cell shows",
    "register_magic_function": "registers an IPython magic (register_magic_function)",
    "register_magics": "registers IPython magics (register_magics)",
    "extension_manager": "loads an IPython extension: its code can hook every later cell",
    "load_extension": "loads an IPython extension: its code can hook every later cell",
    "run_cell": "runs code through IPython (run_cell)",
    "run_code": "runs code through IPython (run_code)",
    "user_ns": "edits the notebook's variables through IPython (user_ns)",
    "user_global_ns": "edits the notebook's variables through IPython (user_global_ns)",
    "comm_manager": "reaches the kernel's comms (comm_manager): the channel the grader asks the notebook's "
                    "functions through",
    "get_comm_manager": "reaches the kernel's comms (get_comm_manager): the channel the grader asks the "
                        "notebook's functions through",
    "register_target": "registers a comm target (register_target): it can take over the grader's channel",
    "unregister_target": "removes a comm target (unregister_target): it can take over the grader's channel",
}
# IPython magics: IPython turns `%load_ext x` into `get_ipython().run_line_magic('load_ext', 'x')` before the
# cell runs, and the scan reads the cell the same way. A magic not listed is named as one.
MAGICS = {
    "load_ext": "loads an IPython extension (%load_ext): its code can hook every later cell",
    "reload_ext": "loads an IPython extension (%reload_ext): its code can hook every later cell",
    "run": "runs a file as code (%run)",
    "writefile": "writes a file (%%writefile)",
    "config": "changes IPython's configuration (%config)",
    "autoreload": "reloads modules by itself (%autoreload)",
    "aimport": "reloads modules by itself (%aimport)",
    "reset": "deletes the notebook's variables (%reset)",
    "env": "changes environment variables (%env)",
    **{shell: "runs a shell command" for shell in ("bash", "sh", "script", "system", "sx", "alias")},
}
SHELL = "runs a shell command (!)"
WRITES_SYS_MODULES = "writes to sys.modules: later imports of that module get the student's object"
# Every word above, for cells that do not parse and are read as text.
SUSPICIOUS_NAMES = {**MODULES, **MEMBERS, **BUILTIN_NAMES, **ATTRIBUTES}
# A string holding one of these names is a way to reach it by name: getattr(sys, "settrace"), __import__("signal").
_NAMED_IN_STRINGS = {**MODULES, **ATTRIBUTES, "modules": MEMBERS["sys.modules"],
                     **{w: BUILTIN_NAMES[w] for w in ("exec", "eval", "compile", "__import__", "get_ipython")}}
_DICT_WRITES = {"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"}


# Findings that are a way to reach posenc's reference around ``checks.without``: a second copy of posenc (read
# from its files and run, imported from another path or under another module name), its blocked code objects
# found again and put back, or code built from strings. ``grade`` puts these in the notes column for the
# student (``report.notes_for``): the block stops a call of posenc, not a student who rebuilds it.
AROUND_THE_REFERENCE = frozenset({
    MODULES["importlib"], MODULES["gc"], MODULES["marshal"], MODULES["runpy"], MODULES["ctypes"],
    MEMBERS["sys.modules"], MEMBERS["sys.path"], MEMBERS["sys.meta_path"], MEMBERS["sys.path_hooks"],
    MEMBERS["types.FunctionType"], MEMBERS["types.CodeType"], ATTRIBUTES["__code__"], ATTRIBUTES["__globals__"],
    BUILTIN_NAMES["exec"], BUILTIN_NAMES["eval"], BUILTIN_NAMES["compile"], BUILTIN_NAMES["__import__"],
    BUILTIN_NAMES["open"], BUILTIN_NAMES["reload"], MAGICS["run"], MAGICS["load_ext"], WRITES_SYS_MODULES,
})


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


@functools.lru_cache(maxsize=1)
def _ipython_transformer():
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()


def _as_python(source: str) -> tuple[str, set[int]]:
    """The cell as IPython runs it (magics and `!` lines become calls on get_ipython()), and the lines that
    IPython rewrote: there, a get_ipython() is IPython's doing, not the student's."""
    try:
        code = _ipython_transformer().transform_cell(source)
    except Exception:  # no IPython, or a cell it cannot tokenize: read the cell as plain Python
        return source, set()
    before = source.splitlines()
    before += [""] * (len(code.splitlines()) - len(before))
    rewritten = {number for number, (was, now) in enumerate(zip(before, code.splitlines()), start=1)
                 if was != now and "get_ipython" not in was}
    return code, rewritten


def _scan_text(source: str, line: int, why: str) -> list[tuple[int, str]]:
    """Findings for a cell that cannot be read as Python: the reason, then every listed word it contains."""
    found = [(line, f"{why} (checked by text only)")]
    for word, message in SUSPICIOUS_NAMES.items():
        if re.search(r"\b" + re.escape(word) + r"\b", source) and (1, message) not in found:
            found.append((1, message))
    if re.search(r"^\s*[%!]", source, re.MULTILINE):
        found.append((1, "uses IPython magics or shell commands"))
    return sorted(found)


def scan_source(source: str, solution_cell: bool) -> list[tuple[int, str]]:
    """(line, message) for each suspicious construct in one cell's code. Never raises: a cell that does not
    parse, or is nested too deeply for Python's parser, is read as text."""
    code, rewritten = _as_python(source)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return _scan_text(source, exc.lineno or 1, "does not parse as Python")
    except (RecursionError, MemoryError, ValueError):
        return _scan_text(source, 1, "is nested too deeply (or too large) to parse")
    try:
        return _scan_tree(tree, solution_cell, rewritten)
    except RecursionError:
        return _scan_text(source, 1, "is nested too deeply to analyse")


def _aliases(tree) -> dict[str, str]:
    """Local name -> the module or module member it stands for, from the cell's imports
    (`import signal as s`: s -> signal; `from os import _exit as leave`: leave -> os._exit)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _canonical(name: str, aliases: dict[str, str]) -> str:
    root = _root(name)
    return aliases[root] + name[len(root):] if root in aliases else name


def _named(name: str, table: dict[str, str]) -> list[str]:
    """The messages of the table's dotted words that name is, or is a part of (`sys.modules[...]`)."""
    return [message for word, message in table.items()
            if name == word or name.startswith((word + ".", word + "["))]


def _attribute_hits(node: ast.Attribute) -> list[str]:
    """The messages of ATTRIBUTES this attribute access is, whatever it is read from."""
    chain, inner = [node.attr], node.value
    while isinstance(inner, ast.Attribute):
        chain.insert(0, inner.attr)
        inner = inner.value
    return [message for word, message in ATTRIBUTES.items()
            if chain[-len(word.split(".")):] == word.split(".")]


def _scan_tree(tree, solution_cell: bool, rewritten: set[int]) -> list[tuple[int, str]]:
    found = []

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
    aliases = _aliases(tree)
    # A variable the cell binds itself (`signal = np.sin(x)`) is not the module of that name.
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    local |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    local -= {alias.asname or alias.name.split(".")[0] for n in ast.walk(tree)
              if isinstance(n, (ast.Import, ast.ImportFrom)) for alias in n.names}
    # A dotted name is judged whole, once: `signal.signal` is a signal handler, not also "signal" alone.
    inner = {id(parent.value) for parent in ast.walk(tree) if isinstance(parent, (ast.Attribute, ast.Subscript))}

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
                if name and _canonical(name, aliases).startswith("sys.modules["):
                    add(node, WRITES_SYS_MODULES)
        # sys.modules.update(...), sys.modules.pop(...), sys.modules.__setitem__(...)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DICT_WRITES
                and _canonical(_dotted(node.func.value) or "", aliases) == "sys.modules"):
            add(node, WRITES_SYS_MODULES)
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
        # Names worth a look: a module, one of its members, a builtin, an attribute of any object.
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and id(node) not in inner:
            for message in _name_hits(node, aliases, local):
                add(node, message)
        if isinstance(node, ast.Name) and _builtin_hit(node, rewritten):
            add(node, _builtin_hit(node, rewritten))
        if isinstance(node, ast.Attribute):
            for message in _attribute_hits(node):
                add(node, message)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in _NAMED_IN_STRINGS:
            add(node, f"{_NAMED_IN_STRINGS[node.value]} (named in a string: {node.value!r})")
        if isinstance(node, ast.Call):
            for message in _ipython_call(node):
                add(node, message)
        if isinstance(node, ast.ExceptHandler) and node.type is None:
            add(node, "catches every exception, KeyboardInterrupt too (defeats the timeout's interrupt)")
        elif isinstance(node, ast.ExceptHandler):  # `except (BaseException, ValueError)` too
            caught = {_dotted(n) or "" for n in ast.walk(node.type)}
            if any("KeyboardInterrupt" in name or "BaseException" in name for name in caught):
                add(node, "catches KeyboardInterrupt (defeats the timeout's interrupt)")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for message in _import_hits(node):
                add(node, message)
        if solution_cell and isinstance(node, ast.Name) and node.id == "posenc" and isinstance(node.ctx, ast.Load):
            add(node, "uses posenc in a solution cell or another cell the student changed "
                      "(fine only if the exercise allows it)")
    return sorted(found)


def _name_hits(node, aliases: dict[str, str], local: set[str]) -> list[str]:
    """What a whole dotted name (`signal.signal`, `sys.modules[...]`, `threading.Thread`) is, in words."""
    name = _dotted(node)
    if not name:
        return []
    full = _canonical(name, aliases)
    hits = _named(full, MEMBERS)
    if not hits and _root(full) in MODULES and _root(name) not in local:
        hits.append(MODULES[_root(full)])
    return hits


def _builtin_hit(node: ast.Name, rewritten: set[int]) -> str | None:
    """What a builtin used by its bare name is (`exec`, also in `exec.__call__(...)`), in words."""
    if node.id not in BUILTIN_NAMES or (node.id == "get_ipython" and node.lineno in rewritten):
        return None  # a get_ipython() that IPython wrote for a %magic is reported as that magic
    return BUILTIN_NAMES[node.id]


def _import_hits(node) -> list[str]:
    """What an import brings in, in words: a listed module, member, builtin or hook."""
    hits = []
    for alias in node.names:
        module = alias.name if isinstance(node, ast.Import) else (node.module or "")
        full = f"{module}.{alias.name}" if isinstance(node, ast.ImportFrom) else module
        hits += _named(full, MEMBERS) or ([MODULES[_root(module)]] if _root(module) in MODULES else [])
        if isinstance(node, ast.ImportFrom):
            hits += [table[alias.name] for table in (BUILTIN_NAMES, ATTRIBUTES) if alias.name in table]
    return hits


def _ipython_call(node: ast.Call) -> list[str]:
    """What a magic (`%load_ext`, `%%writefile`) or a shell line (`!ls`) does, read from the call IPython
    turns it into."""
    func = node.func
    if not isinstance(func, ast.Attribute):
        return []
    if func.attr in ("run_line_magic", "run_cell_magic") and node.args and isinstance(node.args[0], ast.Constant):
        magic = str(node.args[0].value)
        shown = magic if magic.isprintable() else repr(magic)
        return [MAGICS.get(magic, f"runs the IPython magic %{shown}")]
    if (func.attr in ("system", "getoutput") and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name) and func.value.func.id == "get_ipython"):
        return [SHELL]
    return []


def _lesson_sources(assignment: str) -> set[str]:
    """The source of every code cell of the released lesson, as handed out."""
    path = course.lesson_notebook(assignment)
    if not path.exists():
        return set()
    nb = nbformat.read(path, as_version=4)
    return {cell.source for cell in nb.cells if cell.cell_type == "code"}


def _cell_label(index: int, cell) -> str:
    """Where a finding is: the cell's position, and the grade_id the student's copy claims for it."""
    grade_id = str(course.grade_id(cell) or "")
    return f"cell {index}" + (f" ({re.sub(r'[^A-Za-z0-9_.-]', '?', grade_id)[:60]})" if grade_id else "")


def scan_notebook(path: Path, student: str, assignment: str) -> list[Finding]:
    """Findings in every code cell of a handed-in notebook that is not, byte for byte, a code cell of the
    released lesson.

    Which cells are read is decided by their source alone: the nbgrader metadata (grade_id, locked,
    solution) and the cell ids are the student's to edit, so a cell relabelled as a locked test or stripped
    of its metadata is read like any other."""
    nb = nbformat.read(path, as_version=4)
    lesson = _lesson_sources(assignment)
    findings = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or cell.source in lesson:
            continue  # not run, or the lesson's own code
        where = _cell_label(index, cell)
        for line, message in scan_source(cell.source, solution_cell=True):
            findings.append(Finding(student, assignment, where, line, message))
    return findings
