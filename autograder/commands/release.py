"""``python -m autograder release [CHAPTER ...]`` (`make lessons`): the student notebooks lessons/ generated from
the source notebooks solutions/ by nbgrader (solutions stubbed, hidden tests and mark schemes removed)."""

from __future__ import annotations

from pathlib import Path

from .. import course


def release(names: list[str] | None = None, release_dir: Path | None = None) -> list[Path]:
    """Generate the student notebooks of ``names`` (default: every chapter) into lessons/ or ``release_dir``.
    Returns the lesson paths written."""
    written = []
    for name in names or course.assignments():
        args = ["generate_assignment", name, "--force", "--no-db"]
        if release_dir is not None:
            args.append(f"--CourseDirectory.release_directory={release_dir}")
        result = course.nbgrader(*args, check=False)
        if result.returncode:
            raise RuntimeError(f"nbgrader generate_assignment {name} failed:\n{result.stdout}{result.stderr}")
        written.append((release_dir or course.LESSONS) / name / f"{name}.ipynb")
    return written
