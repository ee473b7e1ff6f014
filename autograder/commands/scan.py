"""``python -m autograder scan SUBMISSIONS``: ``autograder.scan``'s findings in every readable submission, as a
table for the instructor to read: findings, not verdicts."""

from __future__ import annotations

from pathlib import Path

from .. import printable
from .. import scan as code_scan
from .. import submissions


def scan(folder: Path) -> tuple[list[code_scan.Finding], list[str]]:
    """Findings for every readable submission under folder (<student>/<chapter>/<chapter>.ipynb); a file
    that cannot be read gives one line, and the others are scanned."""
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
    if not findings:
        return "no findings"
    rows = [("student", "chapter", "cell", "line", "finding")]
    rows += [tuple(map(printable.one_line, (f.student, f.assignment, f.cell, str(f.line), f.message)))
             for f in findings]  # (student strings: one line each, no escape codes)
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows)
