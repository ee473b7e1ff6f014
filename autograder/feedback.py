"""The feedback page: nbgrader's, except that an answer nobody has graded yet reads "awaiting grading".

nbgrader 0.9's feedback page shows every graded cell's score, and a written answer that waits for a human
has no score at all (neither an automatic nor a manual one), which nbgrader's gradebook reports as 0: a
student who gets the page before the instructor has read the answer sees 0 points for it. Here:

* ``AwaitingGrades`` marks each graded cell (and task) whose grade has neither an automatic nor a manual
  score (``cell.metadata.nbgrader.awaiting_grade``) and counts them (``resources["nbgrader"]["awaiting"]``);
* ``FeedbackExporter`` is nbgrader's HTML exporter with the template ``autograder/templates/posenc_feedback``
  (nbgrader's ``feedback`` template, which it extends, with "awaiting grading" for those cells and the number
  of such answers next to the total) and ``AwaitingGrades`` registered.

nbgrader_config.py selects it with ``c.GenerateFeedback.exporter_class``: ``python -m autograder feedback``,
``nbgrader generate_feedback`` and formgrader's feedback button all use it. The exporter sets its own template
(nbgrader's GenerateFeedback would otherwise pick ``feedback`` through the ``HTMLExporter`` settings, which
formgrader's own exporter shares).
"""

from __future__ import annotations

import os
from pathlib import Path

import nbgrader
from nbconvert.exporters import HTMLExporter
from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE = "posenc_feedback"
_FORMGRADER = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader")
NBGRADER_TEMPLATES = os.path.join(_FORMGRADER, "templates")
BOOTSTRAP_CSS = os.path.join(_FORMGRADER, "static", "node_modules", "bootstrap", "dist", "css")  # the page inlines it


class AwaitingGrades(NbGraderPreprocessor):
    """Mark the graded cells that have no score yet (``awaiting_grade``) and count them."""

    def preprocess(self, nb, resources):
        meta = resources["nbgrader"]
        awaiting = 0
        with Gradebook(meta["db_url"]) as gb:
            for cell in nb.cells:
                if not (utils.is_grade(cell) or utils.is_task(cell)):
                    continue
                grade = gb.find_grade(cell.metadata.nbgrader["grade_id"], meta["notebook"], meta["assignment"],
                                      meta["student"])
                waiting = grade.auto_score is None and grade.manual_score is None
                cell.metadata.nbgrader["awaiting_grade"] = waiting
                awaiting += waiting
        resources["nbgrader"]["awaiting"] = awaiting
        return nb, resources


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback exporter with the course's template and ``AwaitingGrades``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.extra_template_basedirs = [str(TEMPLATES), NBGRADER_TEMPLATES,
                                        *[d for d in self.extra_template_basedirs
                                          if d not in (str(TEMPLATES), NBGRADER_TEMPLATES)]]
        # The course template extends nbgrader's by its path (templates/feedback/index.html.j2), and nbgrader's
        # inlines bootstrap.min.css (GenerateFeedback adds that folder too; this exporter works without it).
        missing = [d for d in (NBGRADER_TEMPLATES, BOOTSTRAP_CSS) if d not in self.extra_template_paths]
        self.extra_template_paths = [*self.extra_template_paths, *missing]
        self.template_name = TEMPLATE
        self.template_paths = self._template_paths()  # computed during __init__ for the configured template
        self.register_preprocessor(AwaitingGrades(parent=self), enabled=True)
