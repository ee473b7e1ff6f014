"""The feedback page: nbgrader's, but an answer nobody has graded yet reads "awaiting grading" (nbgrader 0.9: 0)."""

import os

import nbgrader.utils
from nbconvert.exporters import HTMLExporter
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
_FORMGRADER = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader")
NBGRADER_TEMPLATES = os.path.join(_FORMGRADER, "templates")
BOOTSTRAP_CSS = os.path.join(_FORMGRADER, "static", "node_modules", "bootstrap", "dist", "css")  # the page inlines it


class AwaitingGrades(NbGraderPreprocessor):
    """Mark the graded cells that have no score yet (``awaiting_grade``) and count them."""

    def preprocess(self, nb, resources):
        meta = resources["nbgrader"]
        meta["awaiting"] = 0
        with Gradebook(meta["db_url"]) as gb:
            for cell in (cell for cell in nb.cells if nbgrader.utils.is_grade(cell) or nbgrader.utils.is_task(cell)):
                grade = gb.find_grade(cell.metadata.nbgrader["grade_id"], meta["notebook"], meta["assignment"],
                                      meta["student"])
                cell.metadata.nbgrader["awaiting_grade"] = grade.auto_score is None and grade.manual_score is None
                meta["awaiting"] += cell.metadata.nbgrader["awaiting_grade"]
        return nb, resources


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback exporter with ``AwaitingGrades`` and the course's template, which extends nbgrader's."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.extra_template_basedirs = [TEMPLATES, NBGRADER_TEMPLATES, *self.extra_template_basedirs]
        self.extra_template_paths = [*self.extra_template_paths, NBGRADER_TEMPLATES, BOOTSTRAP_CSS]
        self.template_name = "posenc_feedback"  # (not through HTMLExporter's settings: formgrader shares them)
        self.template_paths = self._template_paths()  # computed during __init__ for the configured template
        self.register_preprocessor(AwaitingGrades(parent=self), enabled=True)
