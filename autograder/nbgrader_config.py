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
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(COURSE, "gradebook.db")
# Only the notebooks are part of an assignment; nothing else in the source folder is released.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".*"]

c.Exchange.root = os.path.join(COURSE, "exchange")  # nbgrader's default (/srv/nbgrader/exchange) is not writable
c.Exchange.path_includes_course = True

# Each cell of a submission gets this long to run; an infinite loop costs that cell, not the class.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Exercise cells carry the tag `skip-execution` so that the rendered book does not run stubs and tests.
# nbclient (under nbgrader) skips cells with that tag by default, which would let every test cell "pass"
# unrun: grading and validation must run every cell.
c.Execute.skip_cells_with_tag = "posenc-grading-never-skips"
