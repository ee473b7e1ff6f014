"""Handed-in notebooks: finding them in the folder given to `grade` (``<student_id>/<chapter>/<chapter>.ipynb``,
an LMS export or ``nbgrader collect``, unzipped), refusing what nbgrader must not read with one line per student,
and copying the readable ones into nbgrader's ``submitted`` folder."""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from . import course

# Matched with fullmatch: `$` alone would accept a trailing newline in a folder name.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]*")
# A handed-in notebook larger than this is refused before it is read (outputs or data left in it).
MAX_NOTEBOOK_BYTES = 50 * 2**20
# A chapter folder holds the notebook and perhaps a few files it reads: past these it is refused before it is
# copied (a zip can carry a tree thousands of folders deep, which exhausts Python's recursion in shutil.copytree).
MAX_FOLDER_DEPTH = 8
MAX_FOLDER_ENTRIES = 1000
# ... and past this many MiB in all (links not counted: never copied). A chapter folder is kept in submitted/ and
# autograded/ and copied into each grading's sandbox, so one large file costs its size several times over.
DEFAULT_MAX_FOLDER_MB = 64


def max_folder_bytes() -> int:
    """The largest chapter folder graded, in bytes: $POSENC_MAX_SUBMISSION_MB MiB, else DEFAULT_MAX_FOLDER_MB."""
    text = os.environ.get("POSENC_MAX_SUBMISSION_MB", "")
    try:
        megabytes = float(text) if text else DEFAULT_MAX_FOLDER_MB
    except ValueError:
        raise ValueError(f"POSENC_MAX_SUBMISSION_MB must be a number of MiB, got {text!r}") from None
    if megabytes <= 0:
        raise ValueError(f"POSENC_MAX_SUBMISSION_MB must be positive, got {text!r}")
    return int(megabytes * 2**20)


@dataclass
class Submission:
    student: str
    assignment: str
    folder: Path  # <student>/<assignment>/ in the folder handed to `grade`

    @property
    def notebook(self) -> Path:
        return self.folder / f"{self.assignment}.ipynb"


def notebook_problem(path: Path) -> str | None:
    """Why nbgrader could not read this file as a notebook, in words; None if it can. Never raises, whatever the
    file holds (JSON nested thousands deep raises RecursionError, a huge integer literal ValueError)."""
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            data = b"" if size > MAX_NOTEBOOK_BYTES else f.read(MAX_NOTEBOOK_BYTES + 1)  # (it may have grown)
        text = data.decode("utf-8")
    except OSError as exc:
        return f"cannot read {path.name}: {exc.strerror or exc}"
    except UnicodeDecodeError as exc:
        return f"cannot read {path.name}: it is not UTF-8 text ({exc.reason} at byte {exc.start})"
    size = max(size, len(data))
    if size > MAX_NOTEBOOK_BYTES:
        return (f"{path.name} is {size / 2**20:.0f} MiB, over the {MAX_NOTEBOOK_BYTES / 2**20:g} MiB a notebook may "
                "be (clear its outputs and hand it in again)")
    try:
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            return (f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); the file "
                    "is corrupt")
        except ValueError as exc:  # e.g. an integer literal longer than Python converts
            return f"{path.name} is not JSON a notebook can hold ({_first_line(exc)})"
        nbformat.validate(nbformat.reads(text, as_version=4))
    except RecursionError:
        return f"{path.name} is JSON nested too deeply to be a notebook"
    except MemoryError:
        return f"{path.name} is too large to read as a notebook"
    except Exception as exc:  # nbformat raises several types for a notebook it cannot read
        return f"{path.name} is JSON but not a valid notebook ({_first_line(exc)})"
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]


def _shown(name: str) -> str:
    """A name as it can be printed on one line (quoted when it holds a newline or other control)."""
    return name if name.isprintable() else repr(name)


def _link(path: Path) -> str | None:
    """What is wrong with a link, refused wherever it points (`unzip` restores a zip's links: `alice/01 ->
    ../../solutions/01` would hand in the model solutions); None for a real file or folder. Every entry is checked
    from the resolved root down, so one that is not a link is inside the handed-in folder."""
    if not path.is_symlink():
        return None
    try:
        return f"is a symbolic link (to {_shown(os.readlink(path))})"
    except OSError:  # (removed since: still not a folder to grade)
        return "is a symbolic link (to ?)"


def _linked(student: str, relative: str, path: Path, problem: str) -> str:
    kind = "file" if path.is_file() else "folder"
    return f"{_shown(student)}: not graded: the {kind} {_shown(relative)} {problem}; hand in the notebook itself"


def _visible_entries(folder: Path) -> list[Path]:
    """The entries of a folder, hidden ones (.ipynb_checkpoints, .DS_Store) left out, sorted."""
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def find_submissions(folder: Path, assignments: list[str] | None = None) -> tuple[list[Submission], list[str]]:
    """Every <student>/<chapter>/<chapter>.ipynb under folder (itself resolved once: it may be a link), and a
    one-line message naming the student for each entry that cannot be graded, refused before it is read or copied."""
    given = Path(folder)
    if not given.is_dir():
        raise SystemExit(f"{given} is not a folder (expected <student_id>/<chapter>/<chapter>.ipynb inside)")
    root = given.resolve()
    known = course.assignments()
    found, errors = [], []
    for student_dir in _visible_entries(root):
        student = student_dir.name
        problem = _link(student_dir)
        if problem:
            errors.append(_linked(student, student, student_dir, problem))
            continue
        if not student_dir.is_dir():
            continue  # a stray file next to the student folders (an export's index, a zip)
        if not STUDENT_ID.fullmatch(student):
            errors.append(f"{_shown(student)}: not graded: a student id must be letters, digits and _ . @ + - "
                          f"(rename the folder {_shown(str(given / student))})")
            continue
        try:
            chapter_dirs = _visible_entries(student_dir)
        except OSError as exc:
            errors.append(f"{student}: not graded: cannot read the folder {student} ({exc.strerror or exc})")
            continue
        for chapter_dir in chapter_dirs:
            if assignments and chapter_dir.name not in assignments:
                continue
            try:
                problem = _problem(student, chapter_dir, known)
            except OSError as exc:  # a folder this process may not enter, a file it may not read
                problem = f"{student}: {_shown(chapter_dir.name)} not graded: cannot read it ({exc.strerror or exc})"
            if problem:
                errors.append(problem)
            elif problem is None:
                found.append(Submission(student, chapter_dir.name, chapter_dir))
    return found, errors


def _problem(student: str, chapter_dir: Path, known: list[str]) -> str | None:
    """The line refusing one chapter folder; None if it is graded, "" for a stray file beside the chapter folders."""
    name = chapter_dir.name
    problem = _link(chapter_dir)
    if problem:
        return _linked(student, f"{student}/{name}", chapter_dir, problem)
    if not chapter_dir.is_dir():
        return ""
    if name not in known:
        return f"{student}: {_shown(name)} is not an assignment of this course (known: {', '.join(known)})"
    notebook = chapter_dir / f"{name}.ipynb"
    if not notebook.is_file() and not notebook.is_symlink():
        others = sorted(_shown(p.name) for p in chapter_dir.glob("*.ipynb"))
        hint = f"; found {', '.join(others)}: rename it to {name}.ipynb" if others else ""
        return f"{student}: not graded: {name}/{name}.ipynb is missing{hint}"
    problem = _link(notebook)
    if problem:
        return f"{student}: {name} not graded: {name}.ipynb {problem}, not a file (hand in the notebook itself)"
    problem = folder_problem(chapter_dir) or notebook_problem(notebook) or metadata_tampering(notebook, name)
    if problem:
        return f"{student}: {name} not graded: {problem}. Their previous grades, if any, are kept."
    return None


def _left_behind(folder, name: str) -> bool:
    """What copy_in does not copy: hidden files, caches, and symbolic links (copytree would copy a link's target:
    `x -> /path/to/solutions/...` would bring the instructor's files into the course folder)."""
    return name.startswith(".") or name == "__pycache__" or os.path.islink(os.path.join(folder, name))


def folder_problem(folder: Path) -> str | None:
    """Why a chapter folder cannot be copied and graded as it stands, in words; None if it can: folders nested
    deeper than MAX_FOLDER_DEPTH, more than MAX_FOLDER_ENTRIES entries or ``max_folder_bytes()`` bytes, or an entry
    this process cannot read (a zip restores a mode-000 entry, which stops a copy by an instructor who is not root).
    Walked with a stack; links are neither followed nor counted (copy_in leaves them behind)."""
    stack, entries, size, limit = [(folder, 0)], 0, 0, max_folder_bytes()
    while stack:
        current, depth = stack.pop()
        try:
            with os.scandir(current) as listing:
                items = list(listing)
        except OSError as exc:
            return f"cannot read the folder {_shown(str(current.relative_to(folder.parent)))} ({exc.strerror or exc})"
        entries += len(items)
        if entries > MAX_FOLDER_ENTRIES:
            return (f"the folder {_shown(folder.name)} holds more than {MAX_FOLDER_ENTRIES} files and folders; hand "
                    "in the notebook and the files it reads")
        for item in items:
            if _left_behind(current, item.name):
                continue
            if item.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_FOLDER_DEPTH:
                    return (f"the folder {_shown(folder.name)} has folders nested more than {MAX_FOLDER_DEPTH} "
                            "levels deep; hand in the notebook and the files it reads")
                stack.append((Path(item.path), depth + 1))
            elif not os.access(item.path, os.R_OK):
                return f"cannot read the file {_shown(str(Path(item.path).relative_to(folder.parent)))}"
            else:
                size += item.stat(follow_symlinks=False).st_size
                if size > limit:
                    return (f"the folder {_shown(folder.name)} holds more than {limit / 2**20:g} MiB; hand in "
                            "the notebook and the files it reads (the limit is POSENC_MAX_SUBMISSION_MB)")
    return None


def metadata_tampering(path: Path, assignment: str) -> str | None:
    """How the nbgrader metadata of a handed-in notebook differs from the lesson's, in words; None if it does not.
    A cell may be missing, locked or unlocked, its points changed (nbgrader puts that back), but each cell with
    nbgrader metadata must carry a grade_id of the lesson, once, on the same kind of cell, with the same grade,
    solution and task flags: nbgrader fails on such a notebook with a bare KeyError or "Inconsistent checksums"."""
    lesson = nbformat.read(course.lesson_notebook(assignment), as_version=4)
    known = {course.grade_id(c): c for c in lesson.cells if course.grade_id(c)}
    seen = set()
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            continue
        gid = meta.get("grade_id") if isinstance(meta, dict) else None
        tampered = f"its nbgrader metadata was tampered with: cell {index}"
        if gid is None:
            return f"{tampered} carries nbgrader metadata without a grade_id"
        if not isinstance(gid, str) or gid not in known:
            return f"{tampered} carries grade_id {str(gid)[:40]!r}, which the lesson does not have"
        if gid in seen:
            return f"its nbgrader metadata was tampered with: grade_id {gid!r} appears twice (cell {index})"
        seen.add(gid)
        want = known[gid].metadata["nbgrader"]
        changed = [flag for flag in ("grade", "solution", "task") if bool(meta.get(flag)) != bool(want.get(flag))]
        changed += ["cell type"] if cell.cell_type != known[gid].cell_type else []
        if changed:
            return f"{tampered} ({gid}) has its {', '.join(changed)} changed from the lesson's"
    return None


def copy_in(sub: Submission, cfg) -> Path:
    """Copy one submission into nbgrader's submitted/<student>/<assignment>/ (replacing an older one). One already
    there (``grade`` given the submitted folder ``nbgrader collect`` fills) is graded where it lies, its links
    removed as a copy would have left them out."""
    dest = Path(cfg.CourseDirectory.submitted_directory) / sub.student / sub.assignment
    if dest.exists() and dest.resolve() == sub.folder.resolve():
        for folder, dirs, files in os.walk(dest):
            for name in dirs + files:
                if os.path.islink(os.path.join(folder, name)):
                    os.unlink(os.path.join(folder, name))
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(sub.folder, dest, ignore=lambda folder, names: [n for n in names if _left_behind(folder, n)])
    return dest
