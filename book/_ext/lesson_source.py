"""The book reads each lesson's MyST, not the readable text its students see (book/_ext/lesson_markdown.py).

``make lessons`` writes every markdown cell of a lesson as Markdown any Jupyter renders and keeps the MyST it
was written in under the cell's ``metadata.posenc.myst``. When Sphinx reads a notebook, this puts that MyST
back (``source-read``), so the pages have their citations, glossary links, cross-references and glued numbers.
The chapter's download (``_sources``) is the notebook as written to disk: the readable one."""

from __future__ import annotations

import json

from sphinx.application import Sphinx

from lesson_markdown import KEY, restore  # book/_ext/lesson_markdown.py (Sphinx puts book/_ext on sys.path)


def myst_back(app: Sphinx, docname: str, source: list[str]) -> None:
    if not str(app.env.doc2path(docname)).endswith(".ipynb") or f'"{KEY}"' not in source[0]:
        return
    source[0] = json.dumps(restore(json.loads(source[0])), ensure_ascii=False)


def setup(app: Sphinx):
    app.connect("source-read", myst_back)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
