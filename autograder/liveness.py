"""Which names a notebook cell reads and binds in the global scope: a liveness analysis over its syntax tree,
for ``demo_cells_to_skip`` (``GuardedExecute``) and the names a test cell takes from the notebook (``verdict``)."""

from __future__ import annotations

import ast

MAX_SOURCE = 200_000  # a longer cell is not analysed (like one that does not parse): it would cost minutes
DEMO_TAG = "demo"


class _Scope(ast.NodeVisitor):
    """Names a statement reads from and binds in the global scope. A nested scope (function, lambda, class,
    comprehension) adds its reads of globals, not the names it binds itself."""

    def __init__(self):
        self.loads, self.stores, self.declared = set(), set(), set()

    def visit_Name(self, node):
        (self.loads if isinstance(node.ctx, ast.Load) else self.stores).add(node.id)

    def _inner(self, nodes, params=(), local=True):
        """Reads of globals in a nested scope: its reads less its parameters and, in a function, lambda or
        comprehension (``local``), the names it binds without declaring them ``global``/``nonlocal``. A class
        body reads a name before binding it from the globals (``x = x``), so nothing it binds is subtracted."""
        inner = _Scope()
        for node in nodes:
            inner.visit(node)
        self.loads |= inner.loads - set(params) - ((inner.stores - inner.declared) if local else set())

    def visit_FunctionDef(self, node):
        for expr in node.args.defaults + [d for d in node.args.kw_defaults if d] + node.decorator_list:
            self.visit(expr)
        params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        params += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
        self._inner(node.body, params)
        self.stores.add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        for expr in node.bases + node.decorator_list + [k.value for k in node.keywords]:
            self.visit(expr)
        self._inner(node.body, local=False)
        self.stores.add(node.name)

    def visit_Lambda(self, node):
        for expr in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(expr)  # (defaults are read where the lambda is made: ``lambda a=a: a`` reads global a)
        params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        self._inner([node.body], params + [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None])

    def _comprehension(self, node):
        self.visit(node.generators[0].iter)  # (read in the enclosing scope: ``[x for x in x]`` reads global x)
        self._inner(ast.iter_child_nodes(node))

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Import(self, node):
        self.stores.update(_import_names(node))

    visit_ImportFrom = visit_Import

    def visit_Global(self, node):
        self.stores.update(node.names)
        self.declared.update(node.names)

    visit_Nonlocal = visit_Global


def _import_names(node) -> set[str]:
    return {(a.asname or a.name).split(".")[0] for a in node.names}  # (`import a.b` binds a)


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
    """Names a statement always rebinds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return _import_names(stmt)
    if isinstance(stmt, ast.Assign):
        return set().union(*(_target_names(t) for t in stmt.targets))
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        return _target_names(stmt.target)
    return set()


class _Rebound:
    """The names rebound before a point: this block's, then the enclosing blocks' (a chain, not a copy, so the
    analysis stays linear in the cell's size)."""

    def __init__(self, outer: "_Rebound | None", names):
        self.outer, self.names = outer, names

    def __contains__(self, name) -> bool:
        return name in self.names or (self.outer is not None and name in self.outer)


def _loads(nodes, killed: _Rebound) -> tuple[set[str], set[str]]:
    scope = _Scope()
    for node in nodes:
        scope.visit(node)
    return {name for name in scope.loads if name not in killed}, scope.stores


def _block(stmts, killed: _Rebound) -> tuple[set[str], set[str], set[str]]:
    """``(binds, kills, reads)`` of statements run in order, after the names ``killed`` were rebound. What a
    loop's or an ``if``'s body rebinds is no kill after it (it may not run)."""
    binds, kills, reads = set(), set(), set()
    done = _Rebound(killed, kills)  # (kills only grows in place)
    for stmt in stmts:
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            head_reads, _ = _loads([stmt.iter], done)
            target = _target_names(stmt.target)
            parts = [_block(stmt.body, _Rebound(done, target)), _block(stmt.orelse, done)]
            binds |= target
        elif isinstance(stmt, (ast.While, ast.If)):
            head_reads, _ = _loads([stmt.test], done)
            parts = [_block(stmt.body, done), _block(stmt.orelse, done)]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            head_reads, _ = _loads([item.context_expr for item in stmt.items], done)
            target = set().union(*(_target_names(i.optional_vars) for i in stmt.items if i.optional_vars))
            body = _block(stmt.body, _Rebound(done, target))
            parts = [body]
            binds |= target
            kills |= target | body[1]  # a with's body runs (or the cell stops with an error)
        elif isinstance(stmt, ast.Try):
            head_reads = set()
            parts = [_block(stmt.body, done), _block(stmt.orelse, done), _block(stmt.finalbody, done)]
            parts += [_block(h.body, _Rebound(done, {h.name})) for h in stmt.handlers]
            parts += [(set(), set(), _loads([h.type], done)[0]) for h in stmt.handlers if h.type]
        else:
            head_reads, stores = _loads([stmt], done)
            binds |= stores
            kills |= _kills(stmt)
            parts = []
        reads |= head_reads
        for part_binds, _, part_reads in parts:
            binds |= part_binds
            reads |= part_reads
    return binds, kills, reads


def cell_names(source: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]] | None:
    """``(binds, kills, reads)`` of a cell in the global scope: every name it may bind, the names it always
    rebinds, the names it may read before rebinding them. IPython syntax is translated first. None for a cell
    that does not parse or is longer than ``MAX_SOURCE``."""
    from IPython.core.inputtransformer2 import TransformerManager

    if len(source) > MAX_SOURCE:
        return None
    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tuple(frozenset(names) for names in _block(tree.body, _Rebound(None, set())))


def is_demo(cell, tag: str = DEMO_TAG) -> bool:
    """A code cell tagged ``tag`` that nbgrader does not grade, lock or treat as a solution."""
    meta = cell.metadata.get("nbgrader", {})
    return (cell.cell_type == "code" and tag in cell.metadata.get("tags", [])
            and not (meta.get("grade") or meta.get("solution") or meta.get("locked")))


def demo_cells_to_skip(nb, tag: str = DEMO_TAG) -> set[int]:
    """Indices of the demo cells grading can leave out. Walking back from the last cell with the names a later
    cell that runs may read: a demo cell binding none of them is left out; any other cell runs, and its reads
    replace the names it always rebinds. A cell that does not parse makes every earlier cell run."""
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
