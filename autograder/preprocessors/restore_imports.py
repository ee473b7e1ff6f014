"""``RestoreImports``, a step of the course's own before execution: every test cell starts with the setup cell's
imports (from the gradebook, the instructor's version), followed by ``checks.untampered()``. A solution cell that
rebinds ``checks``, ``posenc`` or ``np`` (``class checks: ...``) or assigns to ``checks.close`` no longer changes
what the tests call. The added lines are visible in the autograded notebook and the feedback. It also puts the
instructor's test sources in nbgrader's resources (``TESTS_KEY``), where ``GuardedExecute`` decides each test
cell from them."""

from __future__ import annotations

import ast

from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution


RESTORE_NOTE = "# Added by the grader: the setup cell's imports again, so that this test uses the course's code."
TESTS_KEY = "posenc_tests"  # resources entry: the instructor's test sources, for GuardedExecute's verdicts


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
            solutions = {cell.name for cell in source.solution_cells}
            setup = [cell.source for cell in source.source_cells
                     if cell.locked and cell.cell_type == "code" and cell.name not in graded]
            tests = {cell.name: cell.source for cell in source.source_cells
                     if cell.cell_type == "code" and cell.name in graded and cell.name not in solutions}
        imports = setup_imports(setup)
        resources[TESTS_KEY] = {"setup": imports, "sources": tests}
        if not imports:
            return nb, resources
        prefix = [RESTORE_NOTE] + imports
        if "from autograder import checks" in imports:
            prefix.append("checks.untampered()")
        self._prefix = "\n".join(prefix) + "\n"
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and is_grade(cell) and not is_solution(cell):
            if not cell.source.startswith(RESTORE_NOTE):
                cell.source = self._prefix + cell.source
        return cell, resources
