"""The README's posenc API table is generated (tools/api_table.py): it must be what the tool writes today."""

from __future__ import annotations

import api_table  # tools/api_table.py (tests/support.py, imported by conftest, puts tools/ on the path)


def test_readme_api_table_is_generated_and_fresh():
    readme = api_table.README.read_text()
    assert api_table.BEGIN in readme and api_table.END in readme, "README.md lost the API table's markers"
    assert api_table.render(readme) == readme, (
        "README.md's posenc API table is stale: run `.venv/bin/python tools/api_table.py` and commit README.md")


def test_every_public_name_has_a_summary():
    missing = [name for name in api_table.posenc.__all__ if not api_table.summary(name)]
    assert not missing, f"no docstring (or comment above a constant) to put in the API table: {missing}"
