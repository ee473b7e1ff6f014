"""``InstructorTests``: the instructor's test cells, never the submission's, and setup imports, from the gradebook."""

import ast

from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

TESTS_KEY = "posenc_tests"  # resources entry: {"setup": import lines, "sources": {grade_id: test source}}


def setup_imports(sources) -> list[str]:
    """The import statements at the top level of the given cell sources, in order, without repeats."""
    lines = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        lines.update((ast.unparse(node), None) for node in tree.body
                     if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.level == 0))
    return list(lines)


class InstructorTests(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        meta = resources["nbgrader"]
        with Gradebook(meta["db_url"]) as gb:
            source = gb.find_notebook(meta["notebook"], meta["assignment"])
            solutions = {cell.name for cell in source.solution_cells}
            graded = {cell.name for cell in source.grade_cells} | solutions
            code = [cell for cell in source.source_cells if cell.cell_type == "code"]
            setup = [cell.source for cell in code if cell.locked and cell.name not in graded]
            tests = {cell.name: cell.source for cell in code if cell.name in graded and cell.name not in solutions}
        resources[TESTS_KEY] = {"setup": setup_imports(setup), "sources": tests}
        return nb, resources
