"""``python -m autograder feedback [CHAPTER ...]``: nbgrader's HTML feedback, one page per autograded submission
(course/feedback/<student>/<chapter>/<chapter>.html, rendered by ``autograder.feedback.FeedbackExporter``)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

from .. import config, gradebook

KEPT = ("timestamp.txt", "submission_secret.txt")  # what nbgrader's release_feedback reads beside the page


def feedback(assignments=None, out=print) -> int:
    """Returns 1 if nbgrader could not make the feedback of a chapter, 0 otherwise."""
    cfg = config.load_config()
    gradebook.check(cfg)
    api = gradebook.api(cfg)
    autograded = Path(cfg.CourseDirectory.autograded_directory)
    feedback_dir = Path(cfg.CourseDirectory.feedback_directory)
    status = 0
    with gradebook.session():
        warnings.filterwarnings("ignore", message="Your element with mimetype")  # glue's data: not for the page
        for name in assignments or sorted({p.name for p in autograded.glob("*/*") if p.is_dir()}):
            result = api.generate_feedback(name, force=True)
            if not result["success"]:
                out(f"ERROR feedback for {name} failed:\n{gradebook.last_error(result)}")
                status = 1
            for folder in feedback_dir.glob(f"*/{name}"):
                prune(folder, name)
    out(f"{len(list(feedback_dir.glob('*/*/*.html')))} feedback pages in {feedback_dir}/<student>/<chapter>/")
    return status


def prune(folder: Path, assignment: str) -> None:
    """Leave only the page and ``KEPT`` in a student's feedback folder (nbgrader copies the student's other files
    there too)."""
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif entry.name not in (f"{assignment}.html", *KEPT) or entry.is_symlink():
            entry.unlink()
