"""Serve MathJax, RequireJS and the ipywidgets embed manager from the built book itself.

With the npm packages of package.json installed (``make book`` runs ``npm ci``), every page loads them
from ``_offline/`` in the build instead of from CDNs, so the book renders without network access. The
widget manager fetches its icon fonts from folders named after its modules, relative to the page, so the
fonts are copied there beside every page.
Without node_modules (no npm on the machine) the book keeps the CDN addresses and says so once.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

FOLDER = "_offline"
# (package path inside node_modules, folder inside _offline)
ASSETS = {
    "mathjax/es5": "mathjax",
    "requirejs/require.js": "requirejs/require.js",
    "@jupyter-widgets/html-manager/dist": "html-manager",
}
# Each bundled module resolves its fonts against its own AMD id, relative to the page:
# "@jupyter-widgets/base" and "/controls" look in @jupyter-widgets/, the embed manager in .../html-manager/dist/.
FONT_FOLDERS = ("@jupyter-widgets", "@jupyter-widgets/html-manager/dist")
FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")


def _node_modules(app: Sphinx) -> Path:
    return Path(app.confdir) / app.config.offline_assets_node_modules


def _available(app: Sphinx) -> bool:
    root = _node_modules(app)
    return all((root / source).exists() for source in ASSETS)


def configure(app: Sphinx, config) -> None:
    if not _available(app):
        logger.info("offline assets: node_modules not found (is npm installed?); the book will load MathJax, "
                    "RequireJS and the widget manager from their CDNs")
        return
    # Relative paths are taken relative to _static/ by Sphinx, so step out of it.
    config.mathjax_path = f"../{FOLDER}/mathjax/tex-mml-chtml.js"
    config.nb_ipywidgets_js = {
        f"../{FOLDER}/requirejs/require.js": {},
        f"../{FOLDER}/html-manager/embed-amd.js": {},
    }


def copy_assets(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html" or not _available(app):
        return
    out = Path(app.outdir)
    root = _node_modules(app)
    for source, target in ASSETS.items():
        src, dst = root / source, out / FOLDER / target
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.map"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    fonts = [f for f in (root / "@jupyter-widgets/html-manager/dist").iterdir() if f.suffix in FONT_SUFFIXES]
    page_dirs = {p.parent for p in out.rglob("*.html") if FOLDER not in p.parts and "_static" not in p.parts}
    for folder in page_dirs:
        for sub in FONT_FOLDERS:
            target = folder / sub
            target.mkdir(parents=True, exist_ok=True)
            for font in fonts:
                shutil.copy2(font, target / font.name)
    logger.info(f"offline assets: copied into {FOLDER}/ and fonts next to {len(page_dirs)} page folders")


def setup(app: Sphinx):
    app.add_config_value("offline_assets_node_modules", "node_modules", "html")
    app.connect("config-inited", configure, priority=100)
    app.connect("build-finished", copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
