"""Where the course lives, and the list of its assignments (one per chapter folder of solutions/)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
LESSONS = ROOT / "lessons"


def assignments() -> list[str]:
    """Chapter names, in order: every folder of solutions/ that holds a notebook of its own name."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if (p / f"{p.name}.ipynb").is_file())


def nbgrader(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run the nbgrader of this environment from the repository root, where it finds the course config."""
    exe = Path(sys.executable).with_name("nbgrader")
    return subprocess.run([str(exe), *args], cwd=ROOT, env={**os.environ, **(env or {})}, check=check,
                          capture_output=True, text=True)


def release(names: list[str] | None = None, release_dir: Path | None = None) -> list[Path]:
    """Generate the student notebooks from the source notebooks with nbgrader (solutions stubbed,
    hidden tests and mark schemes removed). Returns the lesson paths written."""
    written = []
    for name in names or assignments():
        args = ["generate_assignment", name, "--force", "--no-db"]
        if release_dir is not None:
            args.append(f"--CourseDirectory.release_directory={release_dir}")
        result = nbgrader(*args, check=False)
        if result.returncode:
            raise RuntimeError(f"nbgrader generate_assignment {name} failed:\n{result.stdout}{result.stderr}")
        written.append((release_dir or LESSONS) / name / f"{name}.ipynb")
    return written
