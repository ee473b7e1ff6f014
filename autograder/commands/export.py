"""``python -m autograder export [--to FILE]``: the gradebook as CSV by nbgrader's exporter (default: grades.csv in
the course folder), safe in a spreadsheet: names and ids in the gradebook can come from students."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from nbgrader.plugins import CsvExportPlugin

from .. import config, course, gradebook, printable

NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")  # a cell left as it is: a spreadsheet reads it as a number


def export(to: str | None = None, out=print) -> None:
    cfg = config.load_config()
    gradebook.check(cfg)
    path = Path(to) if to else course.course_dir() / "grades.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with gradebook.opened(cfg) as gb:
        CsvExportPlugin(config=cfg, to=str(path)).export(gb)
    neutralise(path)
    out(f"wrote {path}")


def neutralise(path: Path) -> None:
    """Rewrite the CSV at ``path`` so that every cell but a ``NUMBER`` goes through ``printable.spreadsheet_cell``:
    none that a spreadsheet would run as a formula remains."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([[text if NUMBER.fullmatch(text) else printable.spreadsheet_cell(text)
                                       for text in row] for row in rows])
