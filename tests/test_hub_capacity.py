"""The hub's measured capacity, as the guides state it, is the last measurement's (hub/capacity/*.json, written by
`tools/hub_capacity.py --json`): the commands, the date, the table and the numbers the prose quotes."""

from __future__ import annotations

import json

import hub_capacity  # tools/hub_capacity.py (tests/support.py, imported by conftest, puts tools/ on the path)

from support import ROOT

CAPACITY = ROOT / "hub" / "capacity"
README = ROOT / "hub" / "README.md"
GUIDE = ROOT / "book" / "instructor.md"


def runs():
    course = json.loads((CAPACITY / "course.json").read_text())
    torch = [json.loads((CAPACITY / name).read_text()) for name in ("torch.json", "torch-48.json")]
    return course, torch


def section() -> str:
    return README.read_text().split("## How many students", 1)[1].split("\n## ", 1)[0]


def test_the_readme_states_the_measurements_commands_date_and_table():
    course, torch = runs()
    text = section()
    for result in (course, *torch):
        assert f"\n{result['command']}\n" in text, result["command"]
        assert f"Measured on {result['date']} " in text
        assert result["cpus"] == 2 and "2 cores" in text and f"{result['memory_gb']} GiB" in text
        assert all(s["swap_used_mb"] == 0 for s in result["steps"]), "the text says no swap was used"
    assert "torch" not in course["imports"] and all("import torch" in t["imports"] for t in torch)
    assert hub_capacity.guide_table(course, torch) in text, "the table is the JSON's (hub_capacity.guide_table)"


def test_the_numbers_the_prose_quotes_are_measured():
    course, torch = runs()
    text = " ".join(section().split())
    steps = course["steps"] + [s for t in torch for s in t["steps"]]
    largest = max(s["students"] for s in steps)
    assert f"{largest} students with torch leave" in text
    api = [s["hub_api_ms"]["median"] for s in steps]
    cell = [s["execute_ms"]["median"] for s in steps]
    assert f"API answered in {min(api):.0f} to {max(api):.0f} ms" in text
    assert f"a small cell in {min(cell):.0f} to {max(cell):.0f} ms" in text
    busy = torch[1]["steps"][-1]
    assert f"{busy['busy_cell_all_at_once_s']:.1f} s" in text and f"{busy['busy_cell_alone_s']:.1f} s" in text
    guide = " ".join(GUIDE.read_text().split())
    assert f"Up to {largest} students the hub's API answered in {min(api):.0f} to {max(api):.0f} ms" in guide
    assert f"a small cell in {min(cell):.0f} to {max(cell):.0f} ms" in guide


def test_the_recorded_runs_name_no_place_of_the_machine():
    for path in CAPACITY.glob("*.json"):
        text = path.read_text()
        assert "/tmp" not in text and "/root" not in text and "/home" not in text, path.name


def test_the_guide_quotes_the_busy_cell_of_the_largest_class():
    _, torch = runs()
    busy = torch[1]["steps"][-1]
    guide = " ".join(GUIDE.read_text().split())
    assert (f"a cell that took {busy['busy_cell_alone_s']:.1f} s alone took {busy['busy_cell_all_at_once_s']:.1f} s "
            f"when all {busy['students']} kernels ran it at once") in guide
