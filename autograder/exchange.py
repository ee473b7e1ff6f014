"""nbgrader's file-system exchange for a machine whose students share it (the course's hub: hub/README.md,
"The exchange"), with identity and time taken from the file system instead of from what a student wrote.

nbgrader's own classes trust the inbound folder: collect (which runs as the instructor) takes the student from
the submission folder's name and the time from the name and ``timestamp.txt``, only warns when the folder's owner
is someone else, follows symbolic links while copying (so a link to the instructor's files is collected as the
student's work), stops the whole class on one folder over the size limit or with an unreadable name, and release
feedback stops with a traceback on a folder without ``submission_secret.txt``. The subclasses here, selected
through ``c.ExchangeFactory`` in hub/jupyter/*/nbgrader_config.py, change that:

- **collect** (``CollectFromOwner``): an inbound folder is its owner's (``stat``'s uid, which only root can
  change), and is refused when its name claims someone else; the folder and everything in it are read through
  file descriptors opened with ``O_NOFOLLOW``, and a symbolic link, a device, a pipe or a socket anywhere inside,
  an entry owned by another user, or a tree over the size, depth or entry limits refuses the submission before
  anything is copied. The time recorded (``timestamp.txt`` in ``submitted/``, which decides the latest
  submission and lateness) is the latest status change (``st_ctime``) of the folder and everything in it: the
  kernel sets it, a user cannot move it back, and any later change to the submission moves it forward. Each
  refusal is one ``ERROR`` line naming the student, and collect goes on with the class.
- **submit** (``SubmitChecked``): the same copy, with the same limits, from the student's assignment folder
  into inbound and the cache: a submission over the limit is refused before anything is written. Where the
  student has a drawer, ``inbound/<student>/`` (on the course's hub, each student's own small file system, so
  that what one student writes is bounded by the kernel: hub/README.md, "The exchange"), the submission goes
  there; collect reads inbound and every drawer in it, with the same checks.
- **release feedback** (``ReleaseFeedbackEach``): a student whose feedback folder lacks ``timestamp.txt`` or
  ``submission_secret.txt`` (a folder made by hand rather than by nbgrader's submit) is one ``ERROR`` line, and
  everyone else's feedback is released.

The size limit is nbgrader's own ``CourseDirectory.max_dir_size`` (kilobytes of 1000 bytes), for the whole
submission; the folder limits are the grading command's (``autograder.submissions``).
"""

from __future__ import annotations

import datetime
import fnmatch
import glob
import os
import pwd
import re
import secrets
import shutil
import stat

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default import ExchangeCollect, ExchangeReleaseFeedback, ExchangeSubmit
from nbgrader.utils import check_mode, get_username, notebook_hash

from .printable import one_line
from .submissions import MAX_FOLDER_DEPTH, MAX_FOLDER_ENTRIES

# The files nbgrader's submit writes beside the notebooks: the time is never copied (collect writes its own), the
# secret is (release feedback names each page by a hash of it).
TIMESTAMP = "timestamp.txt"
SECRET = "submission_secret.txt"
CHUNK = 1 << 20


class Refused(Exception):
    """Why a submission is not taken, in words for the instructor."""


class _Tree:
    """What one pass over a submission found: its bytes, entries, latest status change."""

    def __init__(self, limit: int, owner: int | None, ignore: list[str]):
        self.limit, self.owner, self.ignore = limit, owner, ignore
        self.size = self.entries = 0
        self.ctime = 0.0

    def check(self, info: os.stat_result, where: str) -> None:
        if self.owner is not None and info.st_uid != self.owner:
            raise Refused(f"{where} belongs to {_user_name(info.st_uid)}, not to the submitting student")
        self.ctime = max(self.ctime, info.st_ctime)

    def add(self, size: int, where: str) -> None:
        self.size += size
        if self.size > self.limit:
            raise Refused(f"over the size limit of {self.limit} bytes (at {where}; CourseDirectory.max_dir_size)")


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _walk(fd: int, tree: _Tree, dest: str | None, where: str, depth: int) -> None:
    """Check (and with ``dest``, copy) the folder open at ``fd``: every entry opened relative to its folder with
    O_NOFOLLOW and checked on its descriptor (fstat), so that nothing is followed and nothing swapped in between
    the check and the read is taken."""
    if depth > MAX_FOLDER_DEPTH:
        raise Refused(f"folders nested more than {MAX_FOLDER_DEPTH} levels (at {where})")
    tree.check(os.fstat(fd), where or ".")
    if dest is not None:
        os.mkdir(dest, 0o700)
    for name in sorted(os.listdir(fd)):
        if any(fnmatch.fnmatch(name, pattern) for pattern in tree.ignore):
            continue
        tree.entries += 1
        if tree.entries > MAX_FOLDER_ENTRIES:
            raise Refused(f"more than {MAX_FOLDER_ENTRIES} entries")
        path = f"{where}/{name}" if where else name
        info = os.lstat(name, dir_fd=fd)
        if stat.S_ISLNK(info.st_mode):
            raise Refused(f"{path} is a symbolic link (never followed)")
        if stat.S_ISDIR(info.st_mode):
            child = _open(name, fd, os.O_DIRECTORY, path)
            try:
                _walk(child, tree, None if dest is None else os.path.join(dest, name), path, depth + 1)
            finally:
                os.close(child)
        elif stat.S_ISREG(info.st_mode):
            _file(name, fd, tree, dest, path)
        else:
            raise Refused(f"{path} is not a regular file or folder ({stat.filemode(info.st_mode)})")


def _open(name: str, dir_fd: int, flags: int, where: str) -> int:
    try:
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | flags, dir_fd=dir_fd)
    except OSError as exc:
        raise Refused(f"{where} cannot be opened without following a link ({exc.strerror})") from None


def _file(name: str, dir_fd: int, tree: _Tree, dest: str | None, where: str) -> None:
    fd = _open(name, dir_fd, 0, where)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{where} is not a regular file")
        tree.check(info, where)
        if dest is None or name == TIMESTAMP:
            tree.add(info.st_size, where)
            return
        out = os.open(os.path.join(dest, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            while chunk := os.read(fd, CHUNK):
                tree.add(len(chunk), where)  # counted as read: a file that grows after the first pass is cut short
                os.write(out, chunk)
        finally:
            os.close(out)
        tree.check(os.fstat(fd), where)  # a change made while it was read moves the recorded time on
    finally:
        os.close(fd)


def read_submission(path: str, limit: int, owner: int | None, ignore: list[str],
                    dest: str | None = None) -> _Tree:
    """Check the submission folder at ``path`` (and copy it to ``dest``, a path that must not exist yet):
    raises Refused, with the reason, for anything the module's docstring lists."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise Refused(f"not a folder of its own (a symbolic link or a file: {exc.strerror})") from None
    tree = _Tree(limit, owner, ignore)
    try:
        _walk(fd, tree, dest, "", 0)
    except RecursionError:
        raise Refused("folders nested too deeply") from None
    finally:
        os.close(fd)
    return tree


def server_time(tree: _Tree) -> str:
    """nbgrader's timestamp text (UTC) for the latest status change the file system recorded."""
    return datetime.datetime.fromtimestamp(tree.ctime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z")


def _limit(coursedir) -> int:
    return 1000 * coursedir.max_dir_size  # nbgrader's unit: kilobytes of 1000 bytes


class CollectFromOwner(ExchangeCollect):
    """nbgrader's collect, taking the student from the folder's owner and the time from the file system
    (the module's docstring)."""

    def _refuse(self, name: str, claimed: str, why) -> None:
        self.log.error("Refused a submission of %s (%s): %s", one_line(claimed), one_line(name), one_line(why))

    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        student_id = self.coursedir.student_id or "*"
        name = f"{student_id}+{glob.escape(self.coursedir.assignment_id)}+*"
        inbound = glob.escape(self.inbound_path)
        latest = {}  # (in inbound itself, and in the drawer of each student who has one)
        for path in sorted(glob.glob(os.path.join(inbound, name)) + glob.glob(os.path.join(inbound, "*", name))):
            name = os.path.basename(path)
            claimed = name.rsplit("+", 3)[0]
            try:
                record = self._record(path, name, claimed)
            except (Refused, OSError) as why:
                self._refuse(name, claimed, why)
                continue
            latest.setdefault(claimed, []).append(record)
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                self.duedate = None
        self.src_records = []
        for records in latest.values():
            records.sort(key=lambda r: r["timestamp"], reverse=True)
            if self.duedate is not None and self.before_duedate:
                records = [r for r in records if r["timestamp"] <= self.duedate] or records
            self.src_records.append(records[0])

    def _record(self, path: str, name: str, claimed: str) -> dict:
        try:
            user = pwd.getpwnam(claimed)
        except KeyError:
            raise Refused(f"no user {claimed!r} on this machine") from None
        info = os.lstat(path)
        if info.st_uid != user.pw_uid:
            raise Refused(f"the folder belongs to {_user_name(info.st_uid)}: only {claimed} can submit as {claimed}")
        tree = read_submission(path, _limit(self.coursedir), user.pw_uid, self.coursedir.ignore)
        when = datetime.datetime.fromtimestamp(tree.ctime, datetime.timezone.utc).replace(tzinfo=None)
        return {"username": claimed, "filename": name, "path": path, "timestamp": when, "uid": user.pw_uid}

    def copy_files(self):
        if not self.src_records:
            self.log.warning("No submissions of '%s' for course '%s' to collect", self.coursedir.assignment_id,
                             self.coursedir.course_id)
        for record in self.src_records:
            try:
                self._collect(record)
            except (Refused, OSError) as why:
                self._refuse(record["filename"], record["username"], why)

    def _collect(self, record: dict) -> None:
        student = record["username"]
        dest = self.coursedir.format_path(self.coursedir.submitted_directory, student, self.coursedir.assignment_id)
        if os.path.isdir(dest):
            existing = self.coursedir.get_existing_timestamp(dest)
            newer = existing is None or record["timestamp"] > existing.replace(tzinfo=None)
            if not ((self.update and newer) or (self.before_duedate and existing != record["timestamp"])):
                self.log.info("No newer submission to collect: %s %s", student, self.coursedir.assignment_id)
                return
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        incoming = f"{dest}.incoming-{secrets.token_hex(4)}"
        try:
            tree = read_submission(record["path"], _limit(self.coursedir),
                                   record["uid"], self.coursedir.ignore, dest=incoming)
            with open(os.path.join(incoming, TIMESTAMP), "w") as out:
                out.write(server_time(tree))
        except BaseException:
            shutil.rmtree(incoming, ignore_errors=True)
            raise
        if os.path.isdir(dest):
            self.log.info("Updating submission: %s %s", student, self.coursedir.assignment_id)
            shutil.rmtree(dest)
        else:
            self.log.info("Collecting submission: %s %s", student, self.coursedir.assignment_id)
        os.rename(incoming, dest)


class SubmitChecked(ExchangeSubmit):
    """nbgrader's submit, copying the assignment folder without following links and within the size limit, into
    the student's drawer (``inbound/<student>/``) where there is one."""

    def init_dest(self):
        drawer = os.path.join(self.root, self.coursedir.course_id, "inbound", get_username())
        if self.coursedir.course_id == "" or self.coursedir.student_id != "*" or not os.path.isdir(drawer):
            return super().init_dest()
        # nbgrader's own steps, with the drawer for inbound (inbound itself is closed to students there)
        if not self.authenticator.has_access(get_username(), self.coursedir.course_id):
            self.fail("You do not have access to this course.")
        if not check_mode(drawer, write=True, execute=True):
            self.fail(f"You don't have write permissions to the directory: {drawer}")
        self.inbound_path = drawer
        self.cache_path = os.path.join(self.cache, self.coursedir.course_id)
        random_str = secrets.token_urlsafe(9) if self.add_random_string else None
        parts = [get_username(), self.coursedir.assignment_id, self.timestamp] + ([random_str] if random_str else [])
        self.assignment_filename = "+".join(parts)

    def do_copy(self, src, dest, log=None):
        try:
            read_submission(src, _limit(self.coursedir), None, self.coursedir.ignore)
            read_submission(src, _limit(self.coursedir), None, self.coursedir.ignore, dest=dest)
        except Refused as why:
            shutil.rmtree(dest, ignore_errors=True)
            self.fail(f"Not submitted: {why}")


class ReleaseFeedbackEach(ExchangeReleaseFeedback):
    """nbgrader's release feedback, one student at a time: a feedback folder nbgrader's submit did not make is
    that student's ERROR line, and the others' feedback is released."""

    def copy_files(self):
        exclude = set(self.coursedir.student_id_exclude.split(",")) if self.coursedir.student_id_exclude else set()
        regexp = re.escape(os.path.sep).join([
            self.coursedir.format_path(self.coursedir.feedback_directory, "(?P<student_id>.*)",
                                       self.coursedir.assignment_id, escape=True),
            "(?P<notebook_id>.*).html"])
        for html_file in sorted(glob.glob(os.path.join(self.src_path, "*.html"))):
            match = re.match(regexp, html_file)
            if match is None:
                self.log.error("Could not match '%s' with regexp '%s'", html_file, regexp)
                continue
            student, notebook = match.group("student_id"), match.group("notebook_id")
            if student in exclude:
                continue
            folder = os.path.dirname(html_file)
            try:
                with open(os.path.join(folder, TIMESTAMP)) as fh:
                    timestamp = fh.read()
                with open(os.path.join(folder, SECRET)) as fh:
                    secret = fh.read()
            except OSError as exc:
                self.log.error("Feedback not released for %s (%s): %s missing: the submission was not made by "
                               "nbgrader's submit", one_line(student), notebook, os.path.basename(exc.filename or ""))
                continue
            checksum = notebook_hash(secret=secret, notebook_id=notebook)
            temporary = os.path.join(self.dest_path, f"{checksum}-tmp.html")
            self.log.info("Releasing feedback for student '%s' on assignment '%s/%s/%s' (%s)", student,
                          self.coursedir.course_id, self.coursedir.assignment_id, notebook, timestamp)
            shutil.copy(html_file, temporary)
            shutil.move(temporary, os.path.join(self.dest_path, f"{checksum}.html"))
