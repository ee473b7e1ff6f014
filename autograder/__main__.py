"""Instructor commands (run from the repository root; nbgrader's data go to course/ or $POSENC_COURSE_DIR).

  release [CHAPTER ...]              nbgrader's student version of solutions/ in lessons/ (`make lessons` runs it)
  grade SUBMISSIONS [--jobs N] [--unsandboxed]
                                     autograde <student>/<chapter>/<chapter>.ipynb in a sandbox, print the scores
  validate NOTEBOOK ... [--unsandboxed]
                                     nbgrader validate on students' notebooks, in the sandbox
  feedback [CHAPTER ...]             nbgrader's HTML feedback for every autograded submission
  export [--to FILE]                 the gradebook as CSV (nbgrader's exporter; default course/grades.csv)
  scan SUBMISSIONS                   list code in submissions that can reach posenc's reference around the tests' block
  roster FILE                        the class's Unix accounts for the course's hub (as root; hub/README.md)
"""

from __future__ import annotations

import argparse
import sys

from . import course, gradebook, printable
from .commands import export, feedback, grade, release, roster, scan, validate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("release", help="nbgrader's student version of solutions/ in lessons/ (`make lessons` runs "
                                         "it, then makes them the book's lessons)")
    rel.add_argument("assignments", nargs="*", help="chapter names (default: all)")
    grd = sub.add_parser("grade", help="autograde a folder of submissions and print the scores")
    grd.add_argument("submissions", help="folder laid out <student_id>/<chapter>/<chapter>.ipynb")
    grd.add_argument("--jobs", "-j", type=int, default=1, help="submissions graded at the same time (default 1)")
    grd.add_argument("--assignment", "-a", action="append", dest="assignments",
                     help="grade only this chapter (repeatable; default: every chapter found)")
    grd.add_argument("--unsandboxed", action="store_true",
                     help="run submissions WITHOUT the bubblewrap sandbox: they can read the solutions, "
                          "rewrite the gradebook and use the network (a warning lists the risks)")
    val = sub.add_parser("validate", help="nbgrader validate on students' notebooks, in the sandbox")
    val.add_argument("notebooks", nargs="+", help="submitted notebooks to run the visible tests of")
    val.add_argument("--unsandboxed", action="store_true",
                     help="run them WITHOUT the sandbox (see grade --unsandboxed)")
    fbk = sub.add_parser("feedback", help="nbgrader's HTML feedback pages for every autograded submission")
    fbk.add_argument("assignments", nargs="*", help="chapter names (default: every autograded chapter)")
    exp = sub.add_parser("export", help="write the gradebook as CSV with nbgrader's exporter")
    exp.add_argument("--to", help="CSV file to write (default: grades.csv in the course folder)")
    scn = sub.add_parser("scan", help="list code in submissions that can reach posenc's reference around the block (for a human to read)")
    scn.add_argument("submissions", help="folder laid out <student_id>/<chapter>/<chapter>.ipynb")
    rst = sub.add_parser("roster", help="make the Unix accounts of a roster for the course's hub (as root)")
    rst.add_argument("file", help="CSV with the header id,first_name,last_name,email (nbgrader's student list)")
    rst.add_argument("--home-base", default="/home", help="where the homes go (default /home)")
    args = parser.parse_args(argv)
    printable.guard_standard_streams()  # a student's string never writes escape codes to the terminal
    gradebook.find_alembic()  # nbgrader runs its alembic program by name when it creates a gradebook
    try:
        return _run(args)
    except gradebook.Unavailable as exc:  # the gradebook's URL is unusable or its database server does not answer
        print(f"ERROR {exc}")
        return 2


def _run(args) -> int:
    if args.command == "release":
        for path in release.release(args.assignments or None):
            print(f"wrote {path.relative_to(course.ROOT)}")
        return 0
    if args.command == "scan":
        findings, errors = scan.scan(args.submissions)
        for message in errors:
            print(f"ERROR {printable.one_line(message)}")
        print(scan.format_findings(findings))
        return 0
    if args.command == "grade":
        return grade.grade(args.submissions, jobs=args.jobs, assignments=args.assignments,
                           unsandboxed=args.unsandboxed)
    if args.command == "validate":
        return validate.validate(args.notebooks, unsandboxed=args.unsandboxed)
    if args.command == "feedback":
        return feedback.feedback(args.assignments or None)
    if args.command == "roster":
        return roster.roster(args.file, home_base=args.home_base)
    if args.command == "export":
        export.export(args.to)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
