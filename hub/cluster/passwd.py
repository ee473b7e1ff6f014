"""The class's passwd file for the cluster (hub/cluster/README.md): one line per person, each with a uid of their
own, made from the roster (nbgrader's student CSV, as `python -m autograder roster` reads it).

    .venv/bin/python hub/cluster/passwd.py class.csv --instructor teacher > passwd
    kubectl -n posenc create configmap posenc-passwd --from-file=passwd=passwd

values.yaml mounts it in the hub (which takes each person's uid and the allowed users from it) and over
/etc/passwd in every user's pod, so that the exchange (autograder/exchange.py) finds a submission's student from
its folder's owner uid, as on one machine. The uids follow the roster's order: append new students at its end,
never reorder or remove lines during a course (a removed line would give the next student someone else's files).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from autograder.commands.roster import USER_NAME, read  # noqa: E402

FIRST_UID = 20000  # the instructor's; student k of the roster (from 1) gets FIRST_UID + k
LAST_UID = 59999  # below nobody (65534) and Debian's UID_MAX (60000)
GID = 100  # the users group: the chart's fsGid, which owns each user's home volume
HOME = "/home/jovyan"  # where the chart mounts each user's own volume
# The image's own accounts (hub/cluster/Dockerfile, python:3.11-slim), kept since this file replaces /etc/passwd
SYSTEM = ["root:x:0:0:root:/root:/bin/bash", "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
          "jovyan:x:1000:1000::/home/jovyan:/bin/bash"]


def passwd(instructor: str, students: list[str]) -> str:
    if not USER_NAME.fullmatch(instructor):
        raise ValueError(f"{instructor!r} is not a Unix user name")
    people = [instructor, *[s for s in students if s != instructor]]
    if len(set(people)) != len(people):
        raise ValueError("the roster names a student twice")
    if FIRST_UID + len(people) - 1 > LAST_UID:
        raise ValueError(f"more than {LAST_UID - FIRST_UID + 1} people")
    taken = {line.split(":")[0] for line in SYSTEM}
    if taken & set(people):
        raise ValueError(f"the roster names an account of the image: {sorted(taken & set(people))}")
    lines = [*SYSTEM, *(f"{name}:x:{FIRST_UID + k}:{GID}::{HOME}:/bin/bash" for k, name in enumerate(people))]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roster", help="nbgrader's student CSV: id,first_name,last_name,email")
    parser.add_argument("--instructor", required=True, help="the instructor's user name (values.yaml's admin)")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(passwd(args.instructor, read(args.roster)))
    except (OSError, ValueError) as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
