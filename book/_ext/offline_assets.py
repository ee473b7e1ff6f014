"""Serve MathJax 3 from the built book itself, and ship only what pages load.

With the npm package of package.json installed (``make book`` runs ``npm ci``), every page with maths loads
MathJax from ``_offline/mathjax/`` in the build instead of from a CDN, so the book renders without network
access. Only the one combined component the pages load is copied, with what it fetches on demand (its fonts,
the TeX extensions that ``autoload`` and ``\\require`` pull in, and the components its context menu offers:
the SVG renderer and the accessibility tools with their speech rules); the other combined bundles are not.
Without node_modules (no npm on the machine) the book keeps the CDN address and says so once.

Also, for every build (npm or not):

- No page loads ipywidgets' embed manager: the explorers are posenc.explorer (pictures and a few lines of the
  page's own script), so ``nb_ipywidgets_js`` is empty and a page that saved widget state would load nothing
  from a CDN (tests/test_book_delivery.py checks that no page saves any).
- The theme's ``fontawesome.js`` (1.5 MB, the largest file of every page's first load) is not loaded: it only
  turns ``<i class="fa-...">`` into SVG and adds icons for custom icon links, of which this book has none;
  the theme's stylesheet draws the same icons from its web fonts (book/_templates/layout.html).
- No source maps: the theme's ``*.js.map`` files are not copied into the site.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

FOLDER = "_offline"
MATHJAX = "mathjax/es5"  # inside node_modules
BUNDLE = "tex-mml-chtml.js"  # the combined component Sphinx's mathjax extension loads by default
# What BUNDLE loads later, relative to MATHJAX (a file or a folder).
ON_DEMAND = (
    "output/chtml/fonts/woff-v2",  # the CommonHTML fonts
    "input/tex/extensions",  # TeX packages loaded by autoload (\boldsymbol, \cancel, ...) or \require
    "output/svg.js", "output/svg",  # the menu's "Math Renderer: SVG"
    "a11y", "sre",  # the menu's accessibility: explorer, speech and its rule files
)
TEMPLATES = Path(__file__).resolve().parent.parent / "_templates"


def _mathjax(app: Sphinx) -> Path:
    return Path(app.confdir) / app.config.offline_assets_node_modules / MATHJAX


def _available(app: Sphinx) -> bool:
    return (_mathjax(app) / BUNDLE).is_file()


def configure(app: Sphinx, config) -> None:
    config.nb_ipywidgets_js = {}
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.insert(0, str(TEMPLATES))
    if not _available(app):
        logger.info("offline assets: node_modules/mathjax not found (is npm installed?); the book will load "
                    "MathJax from its CDN")
        return
    # Relative paths are taken relative to _static/ by Sphinx, so step out of it.
    config.mathjax_path = f"../{FOLDER}/mathjax/{BUNDLE}"


def copy_assets(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for source_map in (out / "_static").rglob("*.map"):
        source_map.unlink()
    # written by the theme although no page loads it (book/_templates/layout.html)
    for unused in (out / "_static" / "scripts").glob("fontawesome.js*"):
        unused.unlink()
    if not _available(app):
        return
    target = out / FOLDER / "mathjax"
    if target.exists():  # a build with another selection leaves no stale files behind
        shutil.rmtree(target)
    source = _mathjax(app)
    for name in (BUNDLE, *ON_DEMAND):
        src, dst = source / name, target / name
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.map"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    logger.info(f"offline assets: MathJax copied into {FOLDER}/mathjax")


def setup(app: Sphinx):
    app.add_config_value("offline_assets_node_modules", "node_modules", "html")
    app.connect("config-inited", configure, priority=100)
    app.connect("build-finished", copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
