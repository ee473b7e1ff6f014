"""``python -m autograder scan SUBMISSIONS``: ``autograder.scan``'s findings (not verdicts) as a table."""

from __future__ import annotations

from pathlib import Path

from .. import printable
from .. import scan as code_scan
from .. import submissions


def scan(folder: Path) -> tuple[list[code_scan.Finding], list[str]]:
    """Findings in every submission under ``folder``, and a line for each file that cannot be read."""
    found, errors = submissions.find_submissions(Path(folder))
    findings = []
    for sub in found:
        try:
            findings += code_scan.scan_notebook(sub.notebook, sub.student, sub.assignment)
        except Exception as exc:  # RecursionError and MemoryError included: one file, not the whole scan
            errors.append(f"{sub.student}: {sub.assignment} not scanned: {sub.notebook.name} is unreadable "
                          f"({type(exc).__name__}: {(str(exc).strip().splitlines() or ['no message'])[0][:200]})")
    return findings, errors


def format_findings(findings: list[code_scan.Finding]) -> str:
    rows = [("student", "chapter", "cell", "line", "finding")]
    rows += [[printable.one_line(field) for field in f] for f in findings]  # (student strings: one line each)
    widths = [max(len(r[i]) for r in rows) for i in range(4)] + [0]  # (the finding, last, is not padded)
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows) if findings else "no findings"
