"""``python -m autograder export [--to FILE]``: the gradebook as CSV, written by nbgrader's CSV exporter
(default: grades.csv in the course folder)."""

from __future__ import annotations

from pathlib import Path

from nbgrader.plugins import CsvExportPlugin

from .. import config, course, gradebook


def export(to: str | None = None, out=print) -> Path:
    cfg = config.load_config()
    gradebook.check(cfg)
    path = Path(to) if to else course.course_dir() / "grades.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    plugin = CsvExportPlugin(config=cfg)
    plugin.to = str(path)
    with gradebook.opened(cfg) as gb:
        plugin.export(gb)
    out(f"wrote {path}")
    return path
