"""What readers of the rendered book expect beyond the text, and two fixes that keep its console clean.

- Figures stay readable in dark mode and the page prints cleanly: book/_static/posenc.css (CSS only:
  Jupyter Book adds every .js file of a static folder as a script tag).
- Each script tag once: sphinx-thebe's inline `const THEBE_JS_URL` reached every page twice (a console error).
- A MathJax 2 bridge for the ipywidgets embed manager, which typesets widget labels with `MathJax.Hub.Queue`
  while the book loads MathJax 3 (a console error per widget on pages with maths)."""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

STATIC = Path(__file__).resolve().parent.parent / "_static"
CSS = "posenc.css"


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


# ipywidgets 8's embed manager (@jupyter-widgets/html-manager 1.x) typesets widget labels with MathJax 2's
# API, `MathJax.Hub.Queue(["Typeset", MathJax.Hub, element])`; the book loads MathJax 3, which has no Hub, so
# every widget on a page with maths threw "Cannot read properties of undefined (reading 'Queue')". This
# bridge gives whatever object becomes window.MathJax (Sphinx's configuration first, then MathJax 3 itself)
# a Hub whose Queue typesets the element with MathJax 3 once MathJax is ready.
MATHJAX2_BRIDGE = """(function () {
  function typeset(element, tries) {
    var mj = window.MathJax;
    if (mj && mj.typesetPromise && mj.startup && mj.startup.promise) {
      mj.startup.promise.then(function () { return mj.typesetPromise(element ? [element] : undefined); })
        .catch(function () {});
    } else if (tries < 100) {
      setTimeout(function () { typeset(element, tries + 1); }, 100);
    }
  }
  var hub = { Queue: function () {
    for (var i = 0; i < arguments.length; i++) {
      var job = arguments[i];
      if (Array.isArray(job) && job[0] === "Typeset") { typeset(job[2], 0); }
    }
  } };
  var current = window.MathJax;
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    get: function () { return current; },
    set: function (value) {
      if (value && typeof value === "object" && !value.Hub) { value.Hub = hub; }
      current = value;
    }
  });
  window.MathJax = current || {};
})();"""


def bridge_widget_maths(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """On pages that load MathJax (Sphinx's mathjax extension adds its configuration script first), add the
    MathJax 2 bridge for the widget manager right after that configuration."""
    scripts = context.get("script_files")
    if not scripts:
        return
    bodies = [(getattr(s, "attributes", {}) or {}).get("body", "") for s in scripts]
    if any(body.startswith("window.MathJax") for body in bodies) and MATHJAX2_BRIDGE not in bodies:
        app.builder.add_js_file(None, body=MATHJAX2_BRIDGE)


def setup(app: Sphinx):
    app.connect("html-page-context", bridge_widget_maths, priority=800)
    app.connect("config-inited", add_static_path)
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    app.add_css_file(CSS)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
