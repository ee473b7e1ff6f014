"""`python -m autograder roster FILE`: as root, the missing Unix account of each student of nbgrader's student CSV
(``id,first_name,last_name,email``, ``id`` the user name), as hub/README.md makes one (the hub's roster too)."""

from __future__ import annotations

import contextlib
import csv
import os
import pwd
import re
import subprocess
from pathlib import Path

from .. import printable

USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")  # a portable Unix user name (useradd's rule, without a final $)


def read(path: str | os.PathLike) -> list[str]:
    """The student ids of a roster, in its order; raises ValueError, naming the line, on a bad one."""
    with open(path, newline="") as handle:
        rows = csv.DictReader(handle)
        if "id" not in (rows.fieldnames or []):
            raise ValueError(f"{path}: the first line must be a header with an 'id' column (nbgrader's student CSV)")
        ids = [(row.get("id") or "").strip() for row in rows]
    for number, student in enumerate(ids, start=2):
        if not USER_NAME.fullmatch(student):
            raise ValueError(f"{path}, line {number}: {printable.one_line(student)!r} is not a Unix user name "
                             "(lower-case letters, digits, _ and -, starting with a letter or _)")
    return ids


def roster(path: str, home_base: str = "/home") -> int:
    try:
        students = read(path)
    except (OSError, ValueError) as exc:
        print(f"ERROR {printable.one_line(exc)}")
        return 2
    if os.geteuid() != 0:
        print("ERROR making Unix accounts needs root: run `sudo .venv/bin/python -m autograder roster FILE`")
        return 2
    failed = 0
    for student in students:
        with contextlib.suppress(KeyError):
            print(f"{pwd.getpwnam(student).pw_name}: exists")
            continue
        home = Path(home_base) / student
        made = subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--user-group",
                               "--shell", "/bin/bash", student], capture_output=True, text=True)
        if made.returncode:
            print(f"ERROR {student}: useradd failed: {printable.one_line(made.stderr.strip())}")
            failed += 1
            continue
        os.chmod(home, 0o700)
        print(f"{student}: made, home {home} (mode 700)")
    print(f"{len(students) - failed} of {len(students)} students have an account; start the hub with "
          f"POSENC_HUB_ROSTER={os.path.abspath(path)}")
    return 1 if failed else 0
