"""nbgrader settings of the course, read through the repository's root nbgrader_config.py (what each setting is
for: autograder/README.md, "The configuration")."""

import os

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COURSE = os.environ.get("POSENC_COURSE_DIR", os.path.join(ROOT, "course"))  # git-ignored instructor data

c.CourseDirectory.course_id = "posenc"
c.CourseDirectory.root = ROOT
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "lessons"
c.CourseDirectory.submitted_directory = os.path.join(COURSE, "submitted")
c.CourseDirectory.autograded_directory = os.path.join(COURSE, "autograded")
c.CourseDirectory.feedback_directory = os.path.join(COURSE, "feedback")
c.CourseDirectory.db_url = os.environ.get("POSENC_DB_URL") or "sqlite:///" + os.path.join(COURSE, "gradebook.db")
# Only the notebooks are released: the chapter's MyST markdown beside them holds the solutions.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".*", "*.md"]

c.Exchange.root = os.path.join(COURSE, "exchange")  # nbgrader's default (/srv/nbgrader/exchange) is not writable
c.Exchange.path_includes_course = True

c.Execute.timeout = int(os.environ.get("POSENC_CELL_TIMEOUT", "60"))
c.Execute.interrupt_on_timeout = True
c.Execute.extra_arguments = ["--IPKernelApp.log_level=CRITICAL", "--IPKernelApp.extensions=autograder.agent"]
c.Execute.skip_cells_with_tag = "posenc-grading-never-skips"
c.GuardedExecute.secret_file = os.path.join(COURSE, "grading_secret")
c.GuardedExecute.notebook_timeout = int(os.environ.get("POSENC_NOTEBOOK_TIMEOUT", "600"))

from autograder.preprocessors import GuardedExecute, InertOutputs, InstructorTests, OverwriteCells  # noqa: E402
from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearOutput, DeduplicateIds,  # noqa: E402
                                    IgnorePattern, LimitOutput, OverwriteKernelspec, SaveAutoGrades)

c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells,
                                      CheckCellMetadata]
c.Autograde.autograde_preprocessors = [InstructorTests, GuardedExecute, IgnorePattern,
                                       ClearMetadataPreprocessor, LimitOutput, InertOutputs, SaveAutoGrades,
                                       AssignLatePenalties, CheckCellMetadata]
# nbformat's schema checked once, after the last step, not after each (an invalid notebook still fails)
c.Exporter.optimistic_validation = True
c.LimitOutput.max_lines = 1000
c.LimitOutput.max_traceback = 100  # (InertOutputs then cuts each text to 20,000 characters)
c.OverwriteCells.add_missing_cells = True

# formgrader and feedback pages: outputs through nbconvert's sanitizer too, "awaiting grading" (feedback.py)
c.HTMLExporter.sanitize_html = True
from autograder.feedback import FeedbackExporter  # noqa: E402
c.GenerateFeedback.exporter_class = FeedbackExporter
