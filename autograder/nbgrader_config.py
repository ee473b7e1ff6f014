"""nbgrader settings of the course. nbgrader reads them through the repository's root nbgrader_config.py
when run from the repository root (the folder that holds solutions/ and lessons/)."""

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
# The gradebook: an SQLite file in the course folder, or the database POSENC_DB_URL names (a PostgreSQL server that
# several graders share: postgresql+psycopg2://USER:PASSWORD@HOST:PORT/DATABASE). A root nbgrader_config.py may set
# c.CourseDirectory.db_url after loading this file instead. autograder/gradebook.py checks the URL before grading.
c.CourseDirectory.db_url = os.environ.get("POSENC_DB_URL") or "sqlite:///" + os.path.join(COURSE, "gradebook.db")
# Only the notebooks are part of an assignment; nothing else in the source folder is released (the chapter's
# MyST markdown, from which its notebook is generated, holds the solutions).
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".*", "*.md"]

c.Exchange.root = os.path.join(COURSE, "exchange")  # nbgrader's default (/srv/nbgrader/exchange) is not writable
c.Exchange.path_includes_course = True

# Each cell of a submission gets this long to run; an infinite loop costs that cell, not the class.
# POSENC_CELL_TIMEOUT overrides it (the tests use a short one).
c.Execute.timeout = int(os.environ.get("POSENC_CELL_TIMEOUT", "60"))
c.Execute.interrupt_on_timeout = True
# Quiet kernels (their start-up warnings are not the students' output), and the grader's agent loaded before any
# notebook code: the grading process calls the student's code through it (autograder/agent.py).
c.Execute.extra_arguments = ["--IPKernelApp.log_level=CRITICAL", "--IPKernelApp.extensions=autograder.agent"]
# Test cells run only in the grading process, decided from the values the student's code returns
# (autograder/verdict.py); the hidden tests' random cases are salted per submission with this secret.
c.GuardedExecute.secret_file = os.path.join(COURSE, "grading_secret")
# One notebook may run this long in all (cells and the grader's calls together): a dozen cells that each sleep
# just under the cell timeout cost 10 minutes, not an hour. POSENC_NOTEBOOK_TIMEOUT overrides it.
c.GuardedExecute.notebook_timeout = int(os.environ.get("POSENC_NOTEBOOK_TIMEOUT", "600"))

# Autograde with nbgrader's own steps, some replaced by thin subclasses and one added (autograder/preprocessors/,
# one step per module): InstructorTests reads the instructor's test cells from the gradebook; SandboxedExecute
# runs each submission's kernel in a bubblewrap sandbox (autograder/sandbox.py: it cannot see the solutions, the
# gradebook, other submissions or the network), records the points earned when a student's code kills the
# kernel (os._exit) or a loop ignores the timeout's interrupt (plain nbgrader then gives that student no grade at
# all), and runs test cells in the grading process only; LimitOutput also caps the
# characters of each output (nbgrader caps lines; one huge line slips through); OverwriteCells puts back deleted
# test cells without failing when their neighbours were deleted too; InertOutputs keeps only inert outputs;
# CheckCellMetadata checks the cells' nbgrader metadata by nbgrader's rules, the schema itself checked once.
# Only autograde is sandboxed: students' own `nbgrader validate` and JupyterLab are not. `grade --unsandboxed`
# loads this configuration and swaps the Execute step for GuardedExecute on the loaded object (autograder/config.py).
from autograder.preprocessors import (CheckCellMetadata, InertOutputs, InstructorTests, LimitOutput,  # noqa: E402
                                      OverwriteCells, SandboxedExecute)
from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402
from nbgrader.preprocessors import (AssignLatePenalties, ClearOutput, DeduplicateIds, IgnorePattern,  # noqa: E402
                                    OverwriteKernelspec, SaveAutoGrades)

c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells,
                                      CheckCellMetadata]
c.Autograde.autograde_preprocessors = [InstructorTests, SandboxedExecute, IgnorePattern,
                                       ClearMetadataPreprocessor, LimitOutput, InertOutputs, SaveAutoGrades,
                                       AssignLatePenalties, CheckCellMetadata]
# nbconvert checks the whole notebook against nbformat's schema after each of these steps (a dozen times per
# submission, a few ms each on a chapter); checked once, after the last step, an invalid notebook still fails
# (only the message no longer names the step that made it invalid).
c.Exporter.optimistic_validation = True
# (GuardedExecute and SandboxedExecute take every c.Execute setting here: traitlets applies a class's config
# to its subclasses.)
# Printed output kept per cell in the autograded notebook and the feedback page.
c.LimitOutput.max_lines = 1000
c.LimitOutput.max_traceback = 100
c.LimitOutput.max_chars = 20000
# A student who deletes a locked test cell gets it back: nbgrader reinserts it from the gradebook.
c.OverwriteCells.add_missing_cells = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Exercise cells carry the tag `skip-execution` so that the rendered book does not run stubs and tests.
# nbclient (under nbgrader) skips cells with that tag by default, which would let every test cell "pass"
# unrun: grading and validation must run every cell.
c.Execute.skip_cells_with_tag = "posenc-grading-never-skips"

# formgrader and the feedback pages: outputs that are HTML go through nbconvert's sanitizer (a second layer
# behind InertOutputs, for notebooks autograded before it), and the feedback page says "awaiting grading"
# for an answer not graded yet instead of a score of 0 (autograder/feedback.py, autograder/templates/).
c.HTMLExporter.sanitize_html = True
from autograder.feedback import FeedbackExporter  # noqa: E402
c.GenerateFeedback.exporter_class = FeedbackExporter
