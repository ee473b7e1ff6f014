"""The instructor's commands, run from the repository root (nbgrader's data go to course/ or $POSENC_COURSE_DIR;
autograder/README.md, "Commands")."""

from __future__ import annotations

import argparse
import sys

from . import course, gradebook, printable
from .commands import export, feedback, grade, release, roster, scan, validate

SUBMISSIONS = "folder laid out <student_id>/<chapter>/<chapter>.ipynb"
UNSANDBOXED = ("run students' code WITHOUT the bubblewrap sandbox: it can read the solutions, rewrite the "
               "gradebook and use the network (a warning lists the risks)")


def _release(names) -> None:
    for path in release.release(names or None):
        print(f"wrote {path.relative_to(course.ROOT)}")


def _scan(folder) -> None:
    findings, errors = scan.scan(folder)
    for message in errors:
        print(f"ERROR {printable.one_line(message)}")
    print(scan.format_findings(findings))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("release", help="nbgrader's student version of solutions/ in lessons/ (`make lessons`)")
    cmd.add_argument("assignments", nargs="*", help="chapter names (default: all)")
    cmd.set_defaults(run=lambda a: _release(a.assignments))
    cmd = sub.add_parser("grade", help="autograde a folder of submissions in the sandbox and print the scores")
    cmd.add_argument("submissions", help=SUBMISSIONS)
    cmd.add_argument("--jobs", "-j", type=int, default=1, help="submissions graded at the same time (default 1)")
    cmd.add_argument("--assignment", "-a", action="append", dest="assignments",
                     help="grade only this chapter (repeatable; default: every chapter found)")
    cmd.add_argument("--unsandboxed", action="store_true", help=UNSANDBOXED)
    cmd.set_defaults(run=lambda a: grade.grade(a.submissions, a.jobs, a.assignments, unsandboxed=a.unsandboxed))
    cmd = sub.add_parser("validate", help="nbgrader validate on students' notebooks, in the sandbox")
    cmd.add_argument("notebooks", nargs="+", help="submitted notebooks to run the visible tests of")
    cmd.add_argument("--unsandboxed", action="store_true", help=UNSANDBOXED)
    cmd.set_defaults(run=lambda a: validate.validate(a.notebooks, a.unsandboxed))
    cmd = sub.add_parser("feedback", help="nbgrader's HTML feedback pages for every autograded submission")
    cmd.add_argument("assignments", nargs="*", help="chapter names (default: every autograded chapter)")
    cmd.set_defaults(run=lambda a: feedback.feedback(a.assignments or None))
    cmd = sub.add_parser("export", help="write the gradebook as CSV with nbgrader's exporter")
    cmd.add_argument("--to", help="CSV file to write (default: grades.csv in the course folder)")
    cmd.set_defaults(run=lambda a: export.export(a.to))
    cmd = sub.add_parser("scan", help="list code in submissions that can reach posenc's reference around the block")
    cmd.add_argument("submissions", help=SUBMISSIONS)
    cmd.set_defaults(run=lambda a: _scan(a.submissions))
    cmd = sub.add_parser("roster", help="make the Unix accounts of a roster for the course's hub (as root)")
    cmd.add_argument("file", help="CSV with the header id,first_name,last_name,email (nbgrader's student list)")
    cmd.add_argument("--home-base", default="/home", help="where the homes go (default /home)")
    cmd.set_defaults(run=lambda a: roster.roster(a.file, home_base=a.home_base))
    args = parser.parse_args(argv)
    printable.guard_standard_streams()  # a student's string never writes escape codes to the terminal
    gradebook.find_alembic()  # nbgrader runs its alembic program by name when it creates a gradebook
    try:
        return args.run(args) or 0
    except gradebook.Unavailable as exc:  # the gradebook's URL is unusable or its database server does not answer
        print(f"ERROR {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
