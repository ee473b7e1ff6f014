"""nbgrader's file-system exchange for the course's hub, trusting the file system instead of what a student wrote
(hub/README.md, "The exchange", says what each class changes and why; hub/jupyter/exchange_config.py selects them)."""

from __future__ import annotations

import datetime
import glob
import os
import pwd
import secrets
import shutil
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default import ExchangeCollect, ExchangeReleaseFeedback, ExchangeSubmit
from nbgrader.utils import check_mode, get_username

from .printable import one_line
from .submissions import Refused, Tree

TIMESTAMP = "timestamp.txt"  # written by nbgrader's submit beside the notebooks; collect writes its own instead


def exchange_tree(max_dir_size: int, owner: int | None, ignore: list[str]) -> Tree:
    """``submissions.Tree`` by the exchange's rules: a link anywhere refused, at most ``max_dir_size`` kilobytes (of
    1000 bytes, as nbgrader's setting), the student's timestamp.txt neither read nor copied."""
    return Tree(1000 * max_dir_size, "CourseDirectory.max_dir_size", owner, [*ignore, TIMESTAMP])


def server_time(tree) -> str:
    """nbgrader's timestamp text (UTC) for the latest status change the file system recorded."""
    return datetime.datetime.fromtimestamp(tree.ctime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z")


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
                uid = pwd.getpwnam(claimed).pw_uid
                ctime = exchange_tree(self.coursedir.max_dir_size, uid, self.coursedir.ignore).read(path).ctime
            except KeyError:
                self._refuse(name, claimed, f"no user {claimed!r} on this machine")
            except OSError as why:
                self._refuse(name, claimed, why)
            else:
                when = datetime.datetime.fromtimestamp(ctime, datetime.timezone.utc).replace(tzinfo=None)
                record = {"username": claimed, "filename": name, "path": path, "timestamp": when, "uid": uid}
                latest.setdefault(claimed, []).append(record)
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                self.duedate = None
        # each student's latest submission (with before_duedate, their latest before the due date, if any)
        due = self.duedate if self.before_duedate and self.duedate is not None else datetime.datetime.max
        self.src_records = [max([r for r in rs if r["timestamp"] <= due] or rs, key=lambda r: r["timestamp"])
                            for rs in latest.values()]

    def copy_files(self):
        """Each submission copied with the server's time, then swapped in: a refused one leaves what was there."""
        if not self.src_records:
            self.log.warning("No submissions of '%s' for course '%s' to collect", self.coursedir.assignment_id,
                             self.coursedir.course_id)
        for record in self.src_records:
            student, assignment = record["username"], self.coursedir.assignment_id
            dest = self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment)
            try:
                if updating := os.path.isdir(dest):
                    existing = self.coursedir.get_existing_timestamp(dest)
                    newer = existing is None or record["timestamp"] > existing.replace(tzinfo=None)
                    if not ((self.update and newer) or (self.before_duedate and existing != record["timestamp"])):
                        self.log.info("No newer submission to collect: %s %s", student, assignment)
                        continue
                tree = exchange_tree(self.coursedir.max_dir_size, record["uid"], self.coursedir.ignore)
                tree.replace(record["path"], dest, before=lambda copy: Path(copy, TIMESTAMP).write_text(
                    server_time(tree)))
                self.log.info("%s submission: %s %s", "Updating" if updating else "Collecting", student, assignment)
            except OSError as why:
                self._refuse(record["filename"], student, why)


class SubmitChecked(ExchangeSubmit):
    """nbgrader's submit, copying the assignment folder as collect reads it, into the student's drawer
    (``inbound/<student>/``) where there is one."""

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
            for target in (None, dest):  # checked whole before anything is written
                exchange_tree(self.coursedir.max_dir_size, None, self.coursedir.ignore).read(src, target)
        except Refused as why:
            shutil.rmtree(dest, ignore_errors=True)
            self.fail(f"Not submitted: {why}")


class ReleaseFeedbackEach(ExchangeReleaseFeedback):
    """nbgrader's release feedback, one student folder at a time: a folder it cannot release (made by hand, without
    submit's timestamp and secret; a page it cannot read) is that student's ERROR line, the others' are released."""

    def copy_files(self):
        for folder in sorted(glob.glob(self.src_path)):  # feedback/<student>/<assignment>
            self.src_path = folder
            try:
                super().copy_files()
            except OSError as exc:
                self.log.error("Feedback not released for %s (%s): %s", one_line(os.path.basename(os.path.dirname(
                    folder))), self.coursedir.assignment_id, one_line(str(exc)))
