"""The explorers' pictures as files of the book, loaded when a reader moves a control.

An explorer (posenc/explorer.py) carries every picture of its grid inside its HTML output as a data: URI, which
is what JupyterLab needs. In the book that would put every state of every explorer into the page's first load;
this extension writes each picture once to ``_explorer/<hash>.png`` and points the output at the file, so a
page loads its default picture only and the others when they are shown.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.osutil import relative_uri

FOLDER = "_explorer"
MARKER = 'class="posenc-explorer-data"'
DATA_URI = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def move_pictures(app: Sphinx, doctree, docname: str) -> None:
    if app.builder.format != "html":
        return
    page = app.builder.get_target_uri(docname)
    folder = Path(app.outdir) / FOLDER
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if MARKER not in text:
            continue

        def to_file(match: re.Match) -> str:
            png = base64.b64decode(match.group(1))
            name = f"{hashlib.sha256(png).hexdigest()[:20]}.png"
            target = folder / name
            if not target.exists():
                folder.mkdir(parents=True, exist_ok=True)
                target.write_bytes(png)
            return relative_uri(page, f"{FOLDER}/{name}")

        raw.replace_self(nodes.raw("", DATA_URI.sub(to_file, text), format="html", classes=raw.get("classes", [])))


def setup(app: Sphinx):
    app.connect("doctree-resolved", move_pictures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
