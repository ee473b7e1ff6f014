"""``python -m autograder feedback [CHAPTER ...]``: nbgrader's HTML feedback, one page per autograded submission
(course/feedback/<student>/<chapter>/<chapter>.html), rendered by ``autograder.feedback.FeedbackExporter``; the
page is all a feedback folder keeps (``prune``)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from .. import config, gradebook


def feedback(assignments=None, out=print) -> int:
    """Returns 1 if nbgrader could not make the feedback of a chapter, 0 otherwise."""
    cfg = config.load_config()
    gradebook.check(cfg)
    api = gradebook.api(cfg)
    autograded = Path(cfg.CourseDirectory.autograded_directory)
    names = assignments or sorted({p.name for p in autograded.glob("*/*") if p.is_dir()})
    status = 0
    with gradebook.session():
        warnings.filterwarnings("ignore", message="Your element with mimetype")  # glue's data: not for the page
        for name in names:
            result = api.generate_feedback(name, force=True)
            if not result["success"]:
                out(f"ERROR feedback for {name} failed:\n{gradebook.last_error(result)}")
                status = 1
    feedback_dir = Path(cfg.CourseDirectory.feedback_directory)
    for name in names:
        for folder in feedback_dir.glob(f"*/{name}"):
            prune(folder, name)
    pages = sorted(feedback_dir.glob("*/*/*.html"))
    out(f"{len(pages)} feedback pages in {feedback_dir} (one per student and chapter: "
        "<student>/<chapter>/<chapter>.html)")
    return status


# What nbgrader's release_feedback reads beside the page: the submission's time and the secret that names the
# page in the exchange (without them it cannot return that student's feedback).
KEPT = ("timestamp.txt", "submission_secret.txt")


def prune(folder: Path, assignment: str) -> None:
    """Leave only the feedback page (and nbgrader's two files, ``KEPT``) in a student's feedback folder. nbgrader
    copies every other file of the autograded folder there too: the student's own files, which they have, and
    which would cost the course folder their size once more."""
    keep = {f"{assignment}.html", *KEPT}
    for parent, dirs, files in os.walk(folder, topdown=False):
        for entry in files:
            path = Path(parent) / entry
            if not (Path(parent) == folder and entry in keep):
                path.unlink()
        for entry in dirs:
            path = Path(parent) / entry
            if path.is_symlink():
                path.unlink()
            else:
                path.rmdir()
