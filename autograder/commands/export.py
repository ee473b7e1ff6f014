"""``python -m autograder export [--to FILE]``: the gradebook as CSV, written by nbgrader's CSV exporter
(default: grades.csv in the course folder), then made safe to open in a spreadsheet: a cell that is not a number
and starts with a formula character is shown as text (``printable.spreadsheet_cell``), since names and ids in
the gradebook can come from students (a hub's user names, an LMS roster)."""

from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.plugins import CsvExportPlugin

from .. import config, course, gradebook, printable


def export(to: str | None = None, out=print) -> Path:
    cfg = config.load_config()
    gradebook.check(cfg)
    path = Path(to) if to else course.course_dir() / "grades.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    plugin = CsvExportPlugin(config=cfg)
    plugin.to = str(path)
    with gradebook.opened(cfg) as gb:
        plugin.export(gb)
    neutralise(path)
    out(f"wrote {path}")
    return path


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def neutralise(path: Path) -> None:
    """Rewrite the CSV at ``path`` so that no cell a spreadsheet would run as a formula remains: every cell
    that is not a number goes through ``printable.spreadsheet_cell``."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([[cell if _number(cell) else printable.spreadsheet_cell(cell) for cell in row]
                                      for row in rows])
