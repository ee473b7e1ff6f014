"""What readers of the rendered book expect beyond the text, and a fix that keeps its console clean.

- Figures stay readable in dark mode and the page prints cleanly: book/_static/posenc.css.
- Display equations fit a narrow screen, or show that they scroll: book/_static/equations.js.
- Figures too small to read on a narrow screen open at full size when tapped: book/_static/figures.js.
- Each script tag once: sphinx-thebe's inline `const THEBE_JS_URL` reached every page twice (a console error)."""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

STATIC = Path(__file__).resolve().parent.parent / "_static"
CSS = "posenc.css"
SCRIPTS = ("equations.js", "figures.js")


def add_static_path(app: Sphinx, config) -> None:
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def drop_duplicate_scripts(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Keep one copy of each script tag. Inline scripts that extensions add while the documents are read
    (sphinx-thebe's `const THEBE_JS_URL = ...`, sphinx-togglebutton's selector) reach the page twice, and a
    second `const` declaration is a console error ("Identifier 'THEBE_JS_URL' has already been declared")."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        attributes = getattr(script, "attributes", {}) or {}
        key = (getattr(script, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    scripts[:] = kept  # in place: it is the builder's own list, which later handlers append to


def setup(app: Sphinx):
    app.connect("config-inited", add_static_path)
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    app.add_css_file(CSS)
    for script in SCRIPTS:
        app.add_js_file(script, defer="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
