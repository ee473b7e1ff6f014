"""Instructor commands: ``python -m autograder release``."""

from __future__ import annotations

import argparse
import sys

from . import course


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("release", help="regenerate lessons/ from solutions/ (same as `make lessons`)")
    rel.add_argument("assignments", nargs="*", help="chapter names (default: all)")
    args = parser.parse_args(argv)
    if args.command == "release":
        for path in course.release(args.assignments or None):
            print(f"wrote {path.relative_to(course.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
