"""Which names a notebook cell reads and binds in the global scope, and which demo cells grading leaves out."""

from __future__ import annotations

import ast
import copy
import symtable

MAX_SOURCE = 200_000  # a longer cell is not analysed (like one that does not parse): it would cost minutes
DEMO_TAG = "demo"
_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign,
                ast.AnnAssign)  # a statement that binds what it binds whenever it runs (but a bare annotation)


def _names(node) -> tuple[set[str], set[str]]:
    """``(binds, reads)`` of a statement in the global scope, from the compiler's symbol tables: the names it
    may bind, and those it or a scope nested in it may read as globals. A class body reads a name from the
    globals until it binds it (``x = x``), so every name it uses but an enclosing function's counts."""
    top = symtable.symtable(ast.unparse(node), "<cell>", "exec")
    binds = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    reads, tables = set(), [top]
    while tables:
        table = tables.pop()
        tables += table.get_children()
        in_class = table.get_type() == "class"
        reads |= {s.get_name() for s in table.get_symbols()
                  if s.is_referenced() and (s.is_global() or in_class and not s.is_free())}
    return binds, reads


def _head(stmt):
    """A compound statement with each of its blocks replaced by ``pass``."""
    head = copy.copy(stmt)
    for field in ("body", "orelse", "finalbody"):
        if getattr(stmt, field, None):
            setattr(head, field, [ast.Pass()])
    if isinstance(stmt, ast.Try):
        head.handlers = [ast.ExceptHandler(h.type, h.name, [ast.Pass()]) for h in stmt.handlers]
    return head


def _block(stmts, killed: tuple[set[str], ...], maybe: set[str]) -> tuple[set[str], set[str], set[str]]:
    """``(binds, kills, reads)`` of statements run in order, after the names in ``killed`` were rebound. What a
    loop's or an ``if``'s body rebinds is no kill after it (it may not run), nor a name in ``maybe`` (a walrus's),
    nor a comprehension's variable (its own: Python 3.12+ lists it in the enclosing table, PEP 709)."""
    binds, kills, reads = set(), set(), set()
    done = (*killed, kills)  # (kills grows in place)
    for stmt in stmts:
        head = _head(stmt) if isinstance(stmt, _COMPOUND) else stmt
        stmt_binds, stmt_reads = _names(head)
        surely = stmt_binds - maybe - {n.id for c in ast.walk(head) if isinstance(c, ast.comprehension)
                                       for n in ast.walk(c.target) if isinstance(n, ast.Name)}
        binds |= stmt_binds
        reads |= {name for name in stmt_reads if not any(name in names for names in done)}
        parts = []
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            parts = [_block(stmt.body, (*done, surely), maybe), _block(stmt.orelse, done, maybe)]
        elif isinstance(stmt, (ast.While, ast.If)):
            parts = [_block(stmt.body, done, maybe), _block(stmt.orelse, done, maybe)]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            parts = [_block(stmt.body, (*done, surely), maybe)]
            kills |= surely | parts[0][1]  # a with's body runs (or the cell stops with an error)
        elif isinstance(stmt, ast.Try):
            parts = [_block(block, done, maybe) for block in (stmt.body, stmt.orelse, stmt.finalbody)]
            parts += [_block(h.body, (*done, {h.name}), maybe) for h in stmt.handlers]
        elif isinstance(stmt, _DEFINITIONS) and getattr(stmt, "value", stmt) is not None:  # (x: int binds no x)
            kills |= surely
        for part_binds, _, part_reads in parts:
            binds |= part_binds
            reads |= part_reads
    return binds, kills, reads


def cell_names(source: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]] | None:
    """``(binds, kills, reads)`` of a cell in the global scope: every name it may bind, the names it always
    rebinds, the names it may read before rebinding them. None for a cell that does not parse (after IPython's
    translation, for a cell that is not Python) or is longer than ``MAX_SOURCE``."""
    if len(source) > MAX_SOURCE:
        return None
    try:
        try:
            if "In [" in source:  # (a pasted prompt, which IPython strips: Python reads ``In [1]: x = 1`` otherwise)
                raise SyntaxError
            tree = ast.parse(source)
        except SyntaxError:  # (a magic, a ``!``, a ``?``: IPython's syntax, translated)
            from IPython.core.inputtransformer2 import TransformerManager

            tree = ast.parse(TransformerManager().transform_cell(source))
        maybe, declared = set(), set()  # (declared: a global statement's names, which a function may bind)
        for node in ast.walk(tree):  # ``x += 1`` as ``x += x, 1``: it reads x (a binding only, to the symbol tables)
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                node.value = ast.Tuple([ast.Name(node.target.id), node.value])
            elif isinstance(node, ast.NamedExpr):
                maybe.add(node.target.id)
            elif isinstance(node, ast.Global):
                declared.update(node.names)
        binds, kills, reads = _block(tree.body, (), maybe)
        return frozenset(binds | declared), frozenset(kills), frozenset(reads)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def is_demo(cell) -> bool:
    """A code cell tagged ``demo`` that nbgrader does not grade, lock or treat as a solution."""
    meta = cell.metadata.get("nbgrader", {})
    return (cell.cell_type == "code" and DEMO_TAG in cell.metadata.get("tags", [])
            and not (meta.get("grade") or meta.get("solution") or meta.get("locked")))


def demo_cells_to_skip(nb) -> set[int]:
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
        if is_demo(cell) and not binds & live:
            skip.add(index)
        else:
            live = (live - kills) | reads
    return skip
