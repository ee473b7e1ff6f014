"""Thin additions to nbgrader's autograde step, switched on in autograder/nbgrader_config.py.

* ``GuardedExecute`` is nbgrader's ``Execute`` except for one case nbgrader does not handle: a kernel that
  dies (``os._exit()`` in a student's cell, a crash, the out-of-memory killer) or that ignores the interrupt
  sent after a cell's timeout (a loop that catches ``KeyboardInterrupt``). Plain nbgrader then fails the
  whole submission: no grade at all for that student. Here the cell gets an error that says what happened,
  the cells after it are marked as not run (an error output each, so their tests score 0, which is what
  the student would see after *Restart and Run All*), and nbgrader records the points earned before it.
* ``LimitOutput`` is nbgrader's ``LimitOutput`` (at most ``max_lines`` lines per cell, ``max_traceback``
  traceback lines) plus ``max_chars`` characters per text output: one ``print("x" * 10**8)`` is a single
  line, which nbgrader's line limit lets through into the autograded notebook and the feedback page.
* ``OverwriteCells`` is nbgrader's, with ``add_missing_cells`` (put back the test cells a student deleted)
  made robust: nbgrader 0.9 inserts a missing test cell after the cell that precedes it in the source and
  fails with a KeyError when that cell is missing too (a student who deleted an exercise's solution and
  test cells, or handed in an empty notebook, then gets no grade at all). Here it goes after the nearest
  earlier cell of the source that is present, or first.
* ``GuardedExecute`` also leaves out, while grading, the narrative cells the instructor tagged ``demo``
  (figures, explorers, glue: display only) when no cell run after them uses a name they define (see
  ``demo_cells_to_skip``): a student whose solution uses such a name gets that cell run, as in their own
  notebook. Autograding then costs the graded cells, not the chapter's figures.
* ``RestoreImports`` puts the setup cell's imports (from the gradebook, the instructor's version) at the
  top of every test cell, followed by ``checks.untampered()``: a solution cell that rebinds ``checks``,
  ``posenc`` or ``np`` (``class checks: ...``) or assigns to ``checks.close`` no longer changes what the
  tests call. The added lines are visible in the autograded notebook and the feedback.
"""

from __future__ import annotations

import ast

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_output
from nbgrader.api import Gradebook
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from nbgrader.preprocessors import LimitOutput as NbgraderLimitOutput
from nbgrader.preprocessors import OverwriteCells as NbgraderOverwriteCells
from traitlets import Bool, Integer, Unicode

# The ``ename`` of the error outputs this module writes; the instructor's score table reports them.
KERNEL_DIED = "KernelDied"
KERNEL_UNRESPONSIVE = "KernelUnresponsive"
NOT_RUN = "CellNotRun"


def _error(ename: str, evalue: str):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


DEMO_TAG = "demo"


class _Scope(ast.NodeVisitor):
    """Names a statement reads from and binds in the notebook's global scope. Reads inside functions,
    lambdas and comprehensions count (when called, they read globals) minus the names those scopes bind
    themselves (parameters, local assignments, loop variables); their local bindings do not count."""

    def __init__(self):
        self.loads, self.stores = set(), set()

    def visit_Name(self, node):
        (self.loads if isinstance(node.ctx, ast.Load) else self.stores).add(node.id)

    def _inner(self, nodes, params=()):
        """A nested scope (function, lambda, class or comprehension body): only its reads of globals count."""
        inner = _Scope()
        for node in nodes:
            inner.visit(node)
        self.loads |= inner.loads - inner.stores - set(params)

    def visit_FunctionDef(self, node):
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        for decorator in node.decorator_list:
            self.visit(decorator)
        params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        params += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
        self._inner(node.body, params)
        self.stores.add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        for expr in node.bases + node.decorator_list + [k.value for k in node.keywords]:
            self.visit(expr)
        self._inner(node.body)
        self.stores.add(node.name)

    def visit_Lambda(self, node):
        self._inner(ast.iter_child_nodes(node),
                    [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs])

    def _comprehension(self, node):
        self._inner(ast.iter_child_nodes(node))

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Import(self, node):
        self.stores.update(_import_names(node))

    visit_ImportFrom = visit_Import

    def visit_Global(self, node):
        self.stores.update(node.names)


def _import_names(node) -> set[str]:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    return {(a.asname or a.name).split(".")[0] for a in node.names}


def _target_names(target) -> set[str]:
    names, todo = set(), [target]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            todo.extend(node.elts)
        elif isinstance(node, ast.Starred):
            todo.append(node.value)
    return names


def _kills(stmt) -> set[str]:
    """Names a top-level statement always rebinds (so their earlier values are not needed after it)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return _import_names(stmt)
    if isinstance(stmt, ast.Assign):
        return set().union(*(_target_names(t) for t in stmt.targets))
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        return _target_names(stmt.target)
    return set()


def _loads(nodes, killed) -> tuple[set[str], set[str]]:
    scope = _Scope()
    for node in nodes:
        scope.visit(node)
    return scope.loads - killed, scope.stores


def _block(stmts, killed: set[str]) -> tuple[set[str], set[str], set[str]]:
    """``(binds, kills, reads)`` of a list of statements run in order, given the names already rebound
    before it. A loop's or an ``if``'s body may not run, so what it rebinds is not a kill after it; inside
    the body, a name rebound earlier in the same pass is not read from outside."""
    binds, kills, reads = set(), set(), set()
    for stmt in stmts:
        done = killed | kills
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            head_reads, _ = _loads([stmt.iter], done)
            target = _target_names(stmt.target)
            parts = [_block(stmt.body, done | target), _block(stmt.orelse, done)]
            binds |= target
        elif isinstance(stmt, ast.While):
            head_reads, _ = _loads([stmt.test], done)
            parts = [_block(stmt.body, done), _block(stmt.orelse, done)]
        elif isinstance(stmt, ast.If):
            head_reads, _ = _loads([stmt.test], done)
            parts = [_block(stmt.body, done), _block(stmt.orelse, done)]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            head_reads, _ = _loads([item.context_expr for item in stmt.items], done)
            target = set().union(*(_target_names(i.optional_vars) for i in stmt.items if i.optional_vars))
            body = _block(stmt.body, done | target)
            parts = [body]
            binds |= target
            kills |= target | body[1]  # a with's body runs (or the cell stops with an error)
        elif isinstance(stmt, ast.Try):
            head_reads = set()
            parts = [_block(stmt.body, done), _block(stmt.orelse, done), _block(stmt.finalbody, done)]
            parts += [_block(h.body, done | ({h.name} if h.name else set())) for h in stmt.handlers]
            parts += [(set(), set(), _loads([h.type], done)[0]) for h in stmt.handlers if h.type]
        else:
            head_reads, stores = _loads([stmt], done)
            binds |= stores
            kills |= _kills(stmt)
            reads |= head_reads
            continue
        reads |= head_reads
        for part_binds, _, part_reads in parts:
            binds |= part_binds
            reads |= part_reads
    return binds, kills, reads


def cell_names(source: str) -> tuple[set[str], set[str], set[str]] | None:
    """``(binds, kills, reads)`` of a cell in the global scope: every name it may bind, the names it always
    rebinds, and the names it may read before rebinding them; None if the cell cannot be parsed. IPython
    syntax (magics, ``!``) is translated first."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError):
        return None
    return _block(tree.body, set())


def is_demo(cell, tag: str = DEMO_TAG) -> bool:
    """A code cell tagged ``tag`` that nbgrader does not grade, lock or treat as a solution."""
    meta = cell.metadata.get("nbgrader", {})
    return (cell.cell_type == "code" and tag in cell.metadata.get("tags", [])
            and not (meta.get("grade") or meta.get("solution") or meta.get("locked")))


def demo_cells_to_skip(nb, tag: str = DEMO_TAG) -> set[int]:
    """Indices of the demo cells grading can leave out. Walking back from the last cell, with the set of
    names some later cell that runs may read (a liveness analysis): a demo cell is left out when it binds
    none of them; any other cell runs, and its reads replace the names it always rebinds. A cell that cannot
    be parsed makes every earlier cell run."""
    skip, live = set(), set()
    for index in range(len(nb.cells) - 1, -1, -1):
        cell = nb.cells[index]
        if cell.cell_type != "code":
            continue
        names = cell_names(cell.source)
        if names is None:
            break
        binds, kills, reads = names
        if is_demo(cell, tag) and not binds & live:
            skip.add(index)
        else:
            live = (live - kills) | reads
    return skip


class GuardedExecute(Execute):
    """nbgrader's Execute; a dead or unresponsive kernel costs the rest of that notebook, not the grade, and
    display-only demo cells nothing later needs are not run (``skip_demo_cells``)."""

    skip_demo_cells = Bool(True, help="leave out demo cells no later cell needs").tag(config=True)
    demo_tag = Unicode(DEMO_TAG, help="the tag of display-only narrative cells").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        self._stopped = None  # why execution stopped, once it has
        self._skipped = demo_cells_to_skip(nb, self.demo_tag) if self.skip_demo_cells else set()
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or index in self._skipped:
            return cell, resources
        if self._stopped is not None:
            cell.outputs = [_error(NOT_RUN, f"this cell was not run because {self._stopped}")]
            return cell, resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._stopped = f"the kernel died while running cell {index} (for example os._exit() or a crash)"
            cell.outputs.append(_error(KERNEL_DIED, "the kernel died while this cell ran: "
                                       "os._exit(), a crash, or the machine ran out of memory"))
        except CellTimeoutError:
            self._stopped = (f"cell {index} did not stop within {self.timeout} s and ignored the interrupt, "
                             "so the kernel was shut down")
            cell.outputs.append(_error(KERNEL_UNRESPONSIVE, f"no reply within {self.timeout} s and the kernel "
                                       "ignored the interrupt (a loop that catches KeyboardInterrupt?); "
                                       "the kernel was shut down"))
            self._kill_kernel()
        self.log.warning("Cell %d: %s; the remaining cells are marked as not run", index, self._stopped)
        return cell, resources

    def _kill_kernel(self):
        try:
            if self.km is not None and run_sync(self.km.is_alive)():
                run_sync(self.km.shutdown_kernel)(now=True)
        except Exception as exc:  # the clean-up of nbclient tries again; never lose the grades over it
            self.log.warning("Could not shut down the unresponsive kernel: %s", exc)


class LimitOutput(NbgraderLimitOutput):
    """nbgrader's LimitOutput, plus a limit on the characters of each text output."""

    max_chars = Integer(
        20_000, help="maximum number of characters of each text output of a cell (-1 means no limit)"
    ).tag(config=True)

    def _limit_chars(self, cell):
        if self.max_chars == -1 or cell.cell_type != "code":
            return cell
        note = f"\n... Output truncated (more than {self.max_chars} characters) ..."
        for output in cell.outputs:
            if output.output_type == "stream" and len(output.text) > self.max_chars:
                output.text = output.text[: self.max_chars] + note
            elif output.output_type in ("execute_result", "display_data"):
                for mime, value in output.get("data", {}).items():
                    if mime.startswith("text/") and isinstance(value, str) and len(value) > self.max_chars:
                        output.data[mime] = value[: self.max_chars] + note
            elif output.output_type == "error":
                output.evalue = output.evalue[: self.max_chars]
                output.traceback = [line[: self.max_chars] for line in output.traceback]
        return cell

    def preprocess_cell(self, cell, resources, cell_index):
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        return self._limit_chars(cell), resources


class OverwriteCells(NbgraderOverwriteCells):
    """nbgrader's OverwriteCells; a missing test cell is put back even when its neighbours are missing too."""

    def add_missing_grade_cells(self, nb, resources):
        source = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        order = [cell.name for cell in source.source_cells]
        by_name = {cell.name: cell for cell in source.source_cells}
        graded = {cell.name: cell for cell in source.grade_cells}
        solutions = {cell.name for cell in source.solution_cells}
        for name in order:
            if name not in graded:
                continue
            present = {cell.metadata.get("nbgrader", {}).get("grade_id"): index
                       for index, cell in enumerate(nb.cells)}
            if name in present:
                continue
            self.log.warning("Missing grade cell %s encountered, adding it back to the notebook", name)
            restored = self.missing_cell_transform(by_name[name], graded[name].max_score,
                                                   is_solution=name in solutions)
            where = 0
            for earlier in reversed(order[: order.index(name)]):
                if earlier in present:
                    where = present[earlier] + 1
                    break
            nb.cells.insert(where, restored)
        return nb, resources


RESTORE_NOTE = "# Added by the grader: the setup cell's imports again, so that this test uses the course's code."


def setup_imports(sources) -> list[str]:
    """The import statements at the top level of the given cell sources, in order, without repeats."""
    lines = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.level == 0):
                line = ast.unparse(node)
                if line not in lines:
                    lines.append(line)
    return lines


class RestoreImports(NbGraderPreprocessor):
    """Prefix every test cell with the setup cell's imports and, if it imports checks, checks.untampered()."""

    def preprocess(self, nb, resources):
        meta = resources["nbgrader"]
        with Gradebook(meta["db_url"]) as gb:
            source = gb.find_notebook(meta["notebook"], meta["assignment"])
            graded = {cell.name for cell in source.grade_cells} | {cell.name for cell in source.solution_cells}
            setup = [cell.source for cell in source.source_cells
                     if cell.locked and cell.cell_type == "code" and cell.name not in graded]
        imports = setup_imports(setup)
        if not imports:
            return nb, resources
        prefix = [RESTORE_NOTE] + imports
        if "from autograder import checks" in imports:
            prefix.append("checks.untampered()")
        self._prefix = "\n".join(prefix) + "\n"
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            if not cell.source.startswith(RESTORE_NOTE):
                cell.source = self._prefix + cell.source
        return cell, resources
