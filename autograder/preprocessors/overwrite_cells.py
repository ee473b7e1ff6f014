"""``OverwriteCells``: nbgrader's, with a deleted test cell put back after the nearest earlier cell of the source
that is present, or first (nbgrader's own fails when that neighbour is gone: autograder/README.md)."""

from nbgrader.preprocessors import OverwriteCells as NbgraderOverwriteCells


class OverwriteCells(NbgraderOverwriteCells):
    def add_missing_grade_cells(self, nb, resources):
        source = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        order = [cell.name for cell in source.source_cells]
        graded = {cell.name: cell for cell in source.grade_cells}
        solutions = {cell.name for cell in source.solution_cells}
        for at, name in enumerate(order):
            present = {cell.metadata.get("nbgrader", {}).get("grade_id"): i for i, cell in enumerate(nb.cells)}
            if name not in graded or name in present:
                continue
            self.log.warning("Missing grade cell %s encountered, adding it back to the notebook", name)
            where = next((present[e] + 1 for e in reversed(order[:at]) if e in present), 0)
            nb.cells.insert(where, self.missing_cell_transform(source.source_cells[at], graded[name].max_score,
                                                               is_solution=name in solutions))
        return nb, resources
