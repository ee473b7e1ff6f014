"""Handed-in notebooks: found in the folder given to `grade`, refused (a line per student) where nbgrader must not
read them, copied into its ``submitted`` folder by ``Tree``, the walk that checks and copies (the exchange's too)."""

from __future__ import annotations

import fnmatch
import os
import pwd
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from . import course
from .printable import one_line

# Matched with fullmatch: `$` alone would accept a trailing newline in a folder name.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]*")
# A handed-in notebook larger than this is refused before it is read (outputs or data left in it).
MAX_NOTEBOOK_BYTES = 50 * 2**20
# A folder holds the notebook and perhaps a few files it reads: past these it is refused before it is copied.
MAX_FOLDER_DEPTH = 8
MAX_FOLDER_ENTRIES = 1000
# ... and past this many MiB in all (links not counted: never copied): kept in submitted/, autograded/, each sandbox.
DEFAULT_MAX_FOLDER_MB = 64
# What grading leaves behind (fnmatch patterns, as nbgrader's CourseDirectory.ignore): hidden files, caches.
LEFT_BEHIND = [".*", "__pycache__"]


def max_folder_bytes() -> int:
    """The largest chapter folder graded, in bytes: $POSENC_MAX_SUBMISSION_MB MiB, else DEFAULT_MAX_FOLDER_MB."""
    text = os.environ.get("POSENC_MAX_SUBMISSION_MB") or str(DEFAULT_MAX_FOLDER_MB)
    if not (re.fullmatch(r"[0-9]+(\.[0-9]*)?|\.[0-9]+", text) and 0 < float(text) < float("inf")):
        raise ValueError(f"POSENC_MAX_SUBMISSION_MB must be a positive number of MiB, got {text!r}")
    return int(float(text) * 2**20)


class Refused(OSError):
    """Why a folder is not taken, in words (an OSError: to whoever copies, a copy that failed)."""


class Tree:
    """``read``: a folder checked (``ctime``: its latest status change), and with ``dest`` (a path that must not exist
    yet) copied, each entry opened with O_NOFOLLOW and checked on its descriptor; ``ignore`` (fnmatch) counted but
    left out. Refused, naming entries from ``where``: a link (left out with ``leave_links``), a special file, an entry
    not ``owner``'s (None: anyone's) or unreadable, past MAX_FOLDER_DEPTH, MAX_FOLDER_ENTRIES or ``limit`` bytes."""

    def __init__(self, limit: int, setting: str, owner: int | None, ignore: list[str], leave_links: bool = False):
        self.limit, self.setting, self.owner, self.ignore = limit, setting, owner, ignore
        self.leave_links, self.size, self.entries, self.ctime = leave_links, 0, 0, 0.0

    def read(self, path, dest=None, where: str = "") -> Tree:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise Refused(f"{where or 'it'} is not a folder of its own (a link or a file?) or not readable "
                          f"({exc.strerror})") from None
        try:
            self.check(os.fstat(fd), where or "the folder")
            self._walk(fd, None if dest is None else str(dest), where, 0)
        finally:
            os.close(fd)
        return self

    def replace(self, path, dest, where: str = "", before=lambda copy: None) -> Tree:
        """``read`` into a hidden folder beside ``dest``, ``before(copy)`` called, then swapped in for ``dest`` (an
        older one, or the folder read itself): a refused or failed copy leaves what was there."""
        dest = os.path.abspath(dest)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".incoming-", dir=os.path.dirname(dest)) as incoming:
            copy = os.path.join(incoming, "copy")
            self.read(path, copy, where)
            before(copy)
            if os.path.exists(dest):
                shutil.rmtree(dest)
            os.rename(copy, dest)
        return self

    def check(self, info: os.stat_result, where: str) -> None:
        if self.owner is not None and info.st_uid != self.owner:
            try:
                name = pwd.getpwuid(info.st_uid).pw_name
            except KeyError:
                name = f"uid {info.st_uid}"
            raise Refused(f"{where} belongs to {name}, not to the submitting student")
        self.ctime = max(self.ctime, info.st_ctime)

    def add(self, size: int, where: str) -> None:
        self.size += size
        if self.size > self.limit:
            raise Refused(f"over the size limit of {self.limit} bytes (at {where}; {self.setting})")

    def _walk(self, fd: int, dest: str | None, where: str, depth: int) -> None:
        if depth > MAX_FOLDER_DEPTH:
            raise Refused(f"folders nested more than {MAX_FOLDER_DEPTH} levels deep (at {where})")
        if dest is not None:
            os.mkdir(dest, 0o700)
        for name in sorted(os.listdir(fd)):
            self.entries += 1
            if self.entries > MAX_FOLDER_ENTRIES:
                raise Refused(f"more than {MAX_FOLDER_ENTRIES} files and folders")
            if any(fnmatch.fnmatch(name, pattern) for pattern in self.ignore):
                continue
            path = f"{where}/{name}" if where else name
            mode = os.lstat(name, dir_fd=fd).st_mode
            if stat.S_ISLNK(mode) and self.leave_links:
                continue
            if stat.S_ISLNK(mode):
                raise Refused(f"{path} is a symbolic link (never followed)")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise Refused(f"{path} is not a regular file or folder ({stat.filemode(mode)})")
            try:
                child = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
            except OSError as exc:
                raise Refused(f"cannot read {path} ({exc.strerror})") from None
            try:
                info = os.fstat(child)
                if stat.S_IFMT(info.st_mode) != stat.S_IFMT(mode):
                    raise Refused(f"{path} was replaced while it was read")
                self.check(info, path)
                target = None if dest is None else os.path.join(dest, name)
                if stat.S_ISDIR(mode):
                    self._walk(child, target, path, depth + 1)
                elif target is None:
                    self.add(info.st_size, path)
                else:
                    with open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
                        while chunk := os.read(child, 1 << 20):
                            self.add(len(chunk), path)  # counted as read: a file grown since the check is cut short
                            out.write(chunk)
                    self.check(os.fstat(child), path)  # a change made while it was read moves the recorded time on
            finally:
                os.close(child)


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
    if (size := max(size, len(data))) > MAX_NOTEBOOK_BYTES:
        return (f"{path.name} is {size / 2**20:.0f} MiB, over the {MAX_NOTEBOOK_BYTES / 2**20:g} MiB a notebook may "
                "be (clear its outputs and hand it in again)")
    try:
        nbformat.validate(nbformat.reads(text, as_version=4))
    except nbformat.reader.NotJSONError as exc:
        why = exc.__cause__
        if hasattr(why, "lineno"):  # json.JSONDecodeError
            return (f"{path.name} is not valid JSON (line {why.lineno}, column {why.colno}: {why.msg}); the file "
                    "is corrupt")
        return f"{path.name} is not JSON a notebook can hold ({str(why).partition(chr(10))[0][:200]})"
    except (RecursionError, MemoryError):
        return f"{path.name} is JSON too large or nested too deeply to be a notebook"
    except Exception as exc:  # nbformat raises several types for a notebook it cannot read
        return f"{path.name} is JSON but not a valid notebook ({str(exc).strip().partition(chr(10))[0][:200]})"
    return None


def _linked(student: str, relative: str, path: Path) -> str | None:
    """The line refusing a link, wherever it points (`unzip` restores a zip's links: `alice/01 ->
    ../../solutions/01` would hand in the model solutions); None for a real file or folder."""
    if not path.is_symlink():
        return None
    try:
        target = one_line(os.readlink(path))
    except OSError:  # (removed since: still not a folder to grade)
        target = "?"
    return (f"{one_line(student)}: not graded: the {'file' if path.is_file() else 'folder'} {one_line(relative)} is "
            f"a symbolic link (to {target}); hand in the notebook itself")


def find_submissions(folder: Path, assignments: list[str] | None = None) -> tuple[list[Submission], list[str]]:
    """Every <student>/<chapter>/<chapter>.ipynb under folder (itself resolved once: it may be a link), and a
    one-line message naming the student for each entry that cannot be graded, refused before it is read or copied."""
    given = Path(folder)
    if not given.is_dir():
        raise SystemExit(f"{given} is not a folder (expected <student_id>/<chapter>/<chapter>.ipynb inside)")
    known = course.assignments()
    found, errors = [], []
    for student_dir in sorted(p for p in given.resolve().iterdir() if not p.name.startswith(".")):  # (.DS_Store)
        student = student_dir.name
        problem = _linked(student, student, student_dir)
        if problem or not student_dir.is_dir():  # (not a folder: an export's index, a zip)
            errors += [problem] if problem else []
            continue
        if not STUDENT_ID.fullmatch(student):
            errors.append(f"{one_line(student)}: not graded: a student id must be letters, digits and _ . @ + - "
                          f"(rename the folder {one_line(str(given / student))})")
            continue
        try:
            chapter_dirs = sorted(p for p in student_dir.iterdir() if not p.name.startswith("."))
        except OSError as exc:
            errors.append(f"{student}: not graded: cannot read the folder {student} ({exc.strerror or exc})")
            continue
        for chapter in chapter_dirs:
            if assignments and chapter.name not in assignments:
                continue
            try:
                problem = _problem(student, chapter, known)
            except OSError as exc:  # a folder this process may not enter, a file it may not read
                problem = f"{student}: {one_line(chapter.name)} not graded: cannot read it ({exc.strerror or exc})"
            if problem:
                errors.append(problem)
            elif problem is None:
                found.append(Submission(student, chapter.name, chapter))
    return found, errors


def _problem(student: str, chapter_dir: Path, known: list[str]) -> str | None:
    """The line refusing one chapter folder; None if it is graded, "" for a stray file beside the chapter folders."""
    name = chapter_dir.name
    notebook = chapter_dir / f"{name}.ipynb"
    problem = _linked(student, f"{student}/{name}", chapter_dir)
    problem = problem or _linked(student, f"{student}/{name}/{name}.ipynb", notebook)
    if problem or not chapter_dir.is_dir():
        return problem or ""
    if name not in known:
        return f"{student}: {one_line(name)} is not an assignment of this course (known: {', '.join(known)})"
    if not notebook.is_file():
        others = sorted(one_line(p.name) for p in chapter_dir.glob("*.ipynb"))
        hint = f"; found {', '.join(others)}: rename it to {name}.ipynb" if others else ""
        return f"{student}: not graded: {name}/{name}.ipynb is missing{hint}"
    try:
        _chapter_tree().read(chapter_dir, None, name)
        problem = notebook_problem(notebook) or metadata_tampering(notebook, name)
    except Refused as why:  # (a zip restores a mode-000 entry, or a tree deep enough to exhaust a copy's recursion)
        problem = f"{one_line(str(why))}; hand in the notebook and the files it reads"
    return f"{student}: {name} not graded: {problem}. Their previous grades, if any, are kept." if problem else None


def _chapter_tree() -> Tree:
    """A chapter folder's walk by grading's rules: links and LEFT_BEHIND left out, at most max_folder_bytes()."""
    limit = max_folder_bytes()
    return Tree(limit, f"POSENC_MAX_SUBMISSION_MB: {limit / 2**20:g} MiB", None, LEFT_BEHIND, leave_links=True)


def metadata_tampering(path: Path, assignment: str) -> str | None:
    """How a handed-in notebook's nbgrader metadata differs from the lesson's, in words (None: it does not): each
    cell with nbgrader metadata must carry a grade_id of the lesson, once, on the same kind of cell, with the same
    grade, solution and task flags (else nbgrader fails with a bare KeyError or "Inconsistent checksums")."""
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
    """One submission copied as it is checked, then swapped in for nbgrader's submitted/<student>/<assignment>/."""
    dest = Path(cfg.CourseDirectory.submitted_directory) / sub.student / sub.assignment
    _chapter_tree().replace(sub.folder, dest, sub.folder.name)
    return dest
