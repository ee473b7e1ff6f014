"""``OverwriteCells``: nbgrader's, with ``add_missing_cells`` (put back the test cells a student deleted) made
robust. nbgrader 0.9 inserts a missing test cell after the cell that precedes it in the source and fails with a
KeyError when that cell is missing too (a student who deleted an exercise's solution and test cells, or handed in
an empty notebook, then gets no grade at all). Here it goes after the nearest earlier cell of the source that is
present, or first."""

from __future__ import annotations

from nbgrader.preprocessors import OverwriteCells as NbgraderOverwriteCells


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
