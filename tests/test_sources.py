"""The chapters are written as MyST markdown notebooks (solutions/<ch>/<ch>.md, jupytext's md:myst) and nbgrader
reads the notebook written from each (autograder/course.py): the two directions lose nothing, the notebook follows
the text, and the text never reaches a student."""

from __future__ import annotations

import copy

import jupytext
import nbformat
import pytest

from autograder import course

CHAPTERS = course.assignments()
# What a chapter's front matter keeps of the notebook's metadata (not jupytext's version: a new one would change
# every chapter).
METADATA_FILTER = "kernelspec,language_info,-jupytext.text_representation.jupytext_version"


def to_markdown(nb) -> str:
    """A notebook as a chapter's MyST markdown, outputs left out: the inverse of ``course.from_markdown``."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        cell.metadata = {"id": cell.pop("id"), **cell.metadata}
        cell.pop("outputs", None)
        if cell.cell_type == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb.metadata.pop("posenc", None)  # the generated notebook's marker (``course.source_notebook``)
    nb.metadata["jupytext"] = {"notebook_metadata_filter": METADATA_FILTER,
                               "text_representation": {"extension": ".md", "format_name": "myst"}}
    return jupytext.writes(nb, fmt="md:myst")


@pytest.mark.parametrize("name", CHAPTERS)
def test_markdown_to_notebook_to_markdown_is_lossless(name):
    """md -> ipynb -> md gives the text back, character for character, and ipynb -> md -> ipynb the notebook."""
    text = course.source_markdown(name).read_text(encoding="utf-8")
    nb = course.from_markdown(text)
    assert to_markdown(nb) == text, f"{name}.md does not survive a round trip through the notebook"
    assert course.from_markdown(to_markdown(nb)) == nb


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_cell_keeps_its_id_and_metadata(name):
    """Cell ids (the names the lessons' cells carry), nbgrader's metadata, tags and myst-nb's options live in
    the cell options of the text and arrive in the notebook nbgrader reads."""
    nb = nbformat.read(course.source_notebook(name), as_version=4)
    assert nb.nbformat_minor == 5 and nb.metadata.kernelspec.name == "python3"
    ids = [cell.id for cell in nb.cells]
    assert len(set(ids)) == len(ids), f"{name}: two cells share an id"
    text = course.source_markdown(name).read_text(encoding="utf-8")
    for cell in nb.cells:
        assert cell.id in text, f"{name}: cell {cell.id} is not named in the markdown"
        if cell.metadata.get("nbgrader"):
            assert course.grade_id(cell) in text, f"{name}: grade_id of {cell.id} is not in the markdown"
    assert nb.metadata["posenc"]["generated_from"] == f"solutions/{name}/{name}.md"


def test_the_notebook_follows_the_markdown(tmp_path, monkeypatch):
    """An edit of the text reaches the notebook nbgrader reads the next time anyone asks for it; an unchanged
    text leaves the file alone."""
    name = CHAPTERS[0]
    (tmp_path / name).mkdir()
    (tmp_path / name / f"{name}.md").write_text(course.source_markdown(name).read_text(encoding="utf-8"))
    monkeypatch.setattr(course, "SOLUTIONS", tmp_path)
    monkeypatch.setattr(course, "ROOT", tmp_path.parent)
    path = course.source_notebook(name)
    first = nbformat.read(path, as_version=4)
    stamp = path.stat().st_mtime_ns
    assert course.source_notebook(name).stat().st_mtime_ns == stamp, "an unchanged source rewrote the notebook"
    markdown = tmp_path / name / f"{name}.md"
    markdown.write_text(markdown.read_text().replace("import numpy as np", "import numpy as np  # edited", 1))
    second = nbformat.read(course.source_notebook(name), as_version=4)
    edited = [c.id for c, d in zip(first.cells, second.cells, strict=True) if c.source != d.source]
    assert edited == ["setup"], edited


def test_a_cell_without_an_id_is_refused_with_its_text():
    text = to_markdown(course.read_source(CHAPTERS[0]))
    without = text.replace(":id: setup-display\n", "", 1)
    assert without != text
    with pytest.raises(ValueError, match="no id option.*For display only"):
        course.from_markdown(without)


@pytest.mark.parametrize("name", CHAPTERS)
def test_only_the_notebook_is_released(name):
    """nbgrader copies a source folder's files into the lesson's: the markdown, which holds the solutions, is
    ignored (autograder/nbgrader_config.py), so lessons/<ch>/ holds the lesson alone."""
    assert sorted(p.name for p in (course.LESSONS / name).iterdir()) == [f"{name}.ipynb"]
