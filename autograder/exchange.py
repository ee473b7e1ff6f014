"""nbgrader's file-system exchange for the course's hub, trusting the file system instead of what a student wrote:
the student is the submission folder's owner, its time the latest status change (``st_ctime``) in it, nothing is
followed through a link, and a refused submission is one ERROR line for its student while the class goes on
(hub/README.md, "The exchange", says what each class changes and why). Selected by ``c.ExchangeFactory`` in
hub/jupyter/exchange_config.py; the size limit is nbgrader's ``CourseDirectory.max_dir_size``, the folder limits
the grading command's (``autograder.submissions``)."""

from __future__ import annotations

import datetime
import fnmatch
import glob
import os
import pwd
import secrets
import shutil
import stat

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default import ExchangeCollect, ExchangeReleaseFeedback, ExchangeSubmit
from nbgrader.utils import check_mode, get_username

from .printable import one_line
from .submissions import MAX_FOLDER_DEPTH, MAX_FOLDER_ENTRIES

# Written by nbgrader's submit beside the notebooks: the time is never copied (collect writes its own), the secret
# is (release feedback names each page by a hash of it).
TIMESTAMP = "timestamp.txt"
SECRET = "submission_secret.txt"


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
            try:
                name = pwd.getpwuid(info.st_uid).pw_name
            except KeyError:
                name = f"uid {info.st_uid}"
            raise Refused(f"{where} belongs to {name}, not to the submitting student")
        self.ctime = max(self.ctime, info.st_ctime)

    def add(self, size: int, where: str) -> None:
        self.size += size
        if self.size > self.limit:
            raise Refused(f"over the size limit of {self.limit} bytes (at {where}; CourseDirectory.max_dir_size)")


def _walk(fd: int, tree: _Tree, dest: str | None, where: str, depth: int) -> None:
    """Check (and with ``dest``, copy) the folder open at ``fd``: every entry is opened relative to its folder
    with O_NOFOLLOW and checked on its descriptor: nothing is followed, nothing swapped in after the check is read."""
    if depth > MAX_FOLDER_DEPTH:
        raise Refused(f"folders nested more than {MAX_FOLDER_DEPTH} levels (at {where})")
    if dest is not None:
        os.mkdir(dest, 0o700)
    for name in sorted(os.listdir(fd)):
        if any(fnmatch.fnmatch(name, pattern) for pattern in tree.ignore):
            continue
        tree.entries += 1
        if tree.entries > MAX_FOLDER_ENTRIES:
            raise Refused(f"more than {MAX_FOLDER_ENTRIES} entries")
        path = f"{where}/{name}" if where else name
        mode = os.lstat(name, dir_fd=fd).st_mode
        if stat.S_ISLNK(mode):
            raise Refused(f"{path} is a symbolic link (never followed)")
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise Refused(f"{path} is not a regular file or folder ({stat.filemode(mode)})")
        try:
            child = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        except OSError as exc:
            raise Refused(f"{path} cannot be opened without following a link ({exc.strerror})") from None
        try:
            info = os.fstat(child)
            if stat.S_IFMT(info.st_mode) != stat.S_IFMT(mode):
                raise Refused(f"{path} was replaced while it was read")
            tree.check(info, path)
            target = None if dest is None else os.path.join(dest, name)
            if stat.S_ISDIR(mode):
                _walk(child, tree, target, path, depth + 1)
            elif target is None or name == TIMESTAMP:
                tree.add(info.st_size, path)
            else:
                out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    while chunk := os.read(child, 1 << 20):
                        tree.add(len(chunk), path)  # counted as read: a file grown since the first pass is cut short
                        os.write(out, chunk)
                finally:
                    os.close(out)
                tree.check(os.fstat(child), path)  # a change made while it was read moves the recorded time on
        finally:
            os.close(child)


def read_submission(path: str, limit: int, owner: int | None, ignore: list[str],
                    dest: str | None = None) -> _Tree:
    """Check the submission folder at ``path`` (and copy it to ``dest``, a path that must not exist yet): raises
    Refused, with the reason, for a link, a special file, an entry not ``owner``'s, or a tree over the limits."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise Refused(f"not a folder of its own (a symbolic link or a file: {exc.strerror})") from None
    tree = _Tree(limit, owner, ignore)
    try:
        tree.check(os.fstat(fd), "the folder")
        _walk(fd, tree, dest, "", 0)
    finally:
        os.close(fd)
    return tree


def server_time(tree: _Tree) -> str:
    """nbgrader's timestamp text (UTC) for the latest status change the file system recorded."""
    return datetime.datetime.fromtimestamp(tree.ctime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z")


def _limit(coursedir) -> int:
    return 1000 * coursedir.max_dir_size  # nbgrader's unit: kilobytes of 1000 bytes


class CollectFromOwner(ExchangeCollect):
    """nbgrader's collect, from inbound and every drawer in it (``inbound/<student>/``), taking the student from the
    folder's owner and the time from the file system."""

    def _refuse(self, name: str, claimed: str, why) -> None:
        self.log.error("Refused a submission of %s (%s): %s", one_line(claimed), one_line(name), one_line(why))

    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.inbound_path = os.path.join(self.root, self.coursedir.course_id, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        name = f"{self.coursedir.student_id or '*'}+{glob.escape(self.coursedir.assignment_id)}+*"
        inbound = glob.escape(self.inbound_path)
        latest = {}
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
        """Copy one submission beside submitted/<student>/<assignment> with the server's time, then swap it in: a
        refused copy leaves the submission collected before as it was."""
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
    """nbgrader's submit, copying the assignment folder as collect reads it (checked whole before anything is
    written), into the student's drawer (``inbound/<student>/``) where there is one."""

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
        parts = [get_username(), self.coursedir.assignment_id, self.timestamp]
        self.assignment_filename = "+".join(parts + ([secrets.token_urlsafe(9)] if self.add_random_string else []))

    def do_copy(self, src, dest, log=None):
        try:
            read_submission(src, _limit(self.coursedir), None, self.coursedir.ignore)
            read_submission(src, _limit(self.coursedir), None, self.coursedir.ignore, dest=dest)
        except Refused as why:
            shutil.rmtree(dest, ignore_errors=True)
            self.fail(f"Not submitted: {why}")


class ReleaseFeedbackEach(ExchangeReleaseFeedback):
    """nbgrader's release feedback, one student folder at a time: a folder without the files nbgrader's submit
    writes (one made by hand) is that student's ERROR line, and the others' feedback is released."""

    def copy_files(self):
        excluded = set(self.coursedir.student_id_exclude.split(","))
        for folder in sorted(glob.glob(self.src_path)):  # feedback/<student>/<assignment>
            student = os.path.basename(os.path.dirname(folder))
            missing = [n for n in (TIMESTAMP, SECRET) if not os.path.isfile(os.path.join(folder, n))]
            if missing and student not in excluded:
                self.log.error("Feedback not released for %s (%s): %s missing: the submission was not made by "
                               "nbgrader's submit", one_line(student), self.coursedir.assignment_id,
                               " and ".join(missing))
            elif not missing:
                self.src_path = folder
                try:
                    super().copy_files()
                except OSError as exc:  # (an unreadable file costs its own student one line, not the release)
                    self.log.error("Feedback not released for %s (%s): %s", one_line(student),
                                   self.coursedir.assignment_id, one_line(str(exc)))
