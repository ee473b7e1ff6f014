"""Launch buttons only for a book that names its repository.

``repository: url:`` in _config.yml is the one setting. With a URL, each chapter page offers Binder and Colab
(the providers of ``launch_buttons``) and a link to the repository; left empty, the book shows no launch button
and no repository link, so a reader never meets a link that leads nowhere. The download button does not need a
repository and stays either way. What the buttons open, lessons/<ch>/<ch>.ipynb in the repository, starts with
the install cell (book/_ext/install_cell.py), which installs the course from that repository where it is missing:
`make lessons` writes the URL into it.

Thebe is switched off: Jupyter Book loads sphinx-thebe on every page, which then configures a live-code kernel
from an unrelated example repository on Binder (its default) and a script from a CDN. This book has no Thebe
button, so the extension's handlers and stylesheet are removed.
"""

from __future__ import annotations

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

REPOSITORY_BUTTONS = ("use_repository_button", "use_issues_button", "use_edit_page_button")


def configure(app: Sphinx, config) -> None:
    options = config.html_theme_options
    url = (options.get("repository_url") or "").strip()
    if url:
        options["use_repository_button"] = True
        return
    options.pop("repository_url", None)
    options["launch_buttons"] = {}
    for key in REPOSITORY_BUTTONS:
        options[key] = False
    logger.info("launch buttons: no repository url in _config.yml, so no launch buttons or repository links")


def drop_thebe(app: Sphinx) -> None:
    """Disconnect sphinx-thebe (registered by Jupyter Book before this extension loads) and drop its CSS."""
    for listeners in app.events.listeners.values():
        for listener in list(listeners):
            if getattr(listener.handler, "__module__", "").startswith("sphinx_thebe"):
                app.disconnect(listener.id)
    app.registry.css_files[:] = [(name, attrs) for name, attrs in app.registry.css_files
                                 if not str(name).startswith("sphinx-thebe")]


def setup(app: Sphinx):
    drop_thebe(app)
    app.connect("config-inited", configure, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
