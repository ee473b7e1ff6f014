"""``InstructorTests``, a step of the course's own before execution: puts the instructor's test cells (from the
gradebook, never the submission's copies) and the setup cell's imports in nbgrader's resources (``TESTS_KEY``),
where ``GuardedExecute`` runs and decides each test cell in the grading process."""

from __future__ import annotations

import ast

from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

TESTS_KEY = "posenc_tests"  # resources entry: {"setup": import lines, "sources": {grade_id: test source}}


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


class InstructorTests(NbGraderPreprocessor):
    """The instructor's test sources and setup imports, read from the gradebook into the resources."""

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
        resources[TESTS_KEY] = {"setup": setup_imports(setup), "sources": tests}
        return nb, resources
