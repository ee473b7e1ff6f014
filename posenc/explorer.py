"""Explorers that move without a kernel: every state of a small parameter grid drawn once with matplotlib,
shown as one HTML output whose controls swap the pictures with a few lines of inline JavaScript.

The same output works wherever HTML outputs run scripts, with no library and no network: the static book
(book/_ext/explorers.py moves the pictures into files that load when a control moves), JupyterLab, Colab and
VS Code. Where scripts do not run (an untrusted notebook, GitHub's preview) it shows the default figure with
its controls disabled. Each picture's title must show the value of every control, so that what a control
reads and what the figure says cannot disagree: ``explorer`` checks it for every state.

Usage (a chapter's explorer cell)::

    from posenc.explorer import checkbox, dropdown, explorer, slider

    def draw(slope, length):                   # one keyword argument per control, returns the Figure
        fig, ax = plt.subplots(figsize=(7, 3))
        ...
        ax.set_title(f"m = {slope:g}, L = {length}")
        return fig                             # not plt.show(): explorer saves and closes it

    explorer(draw, {"slope": slider([2.0 ** -k for k in range(8, -1, -1)], "slope m", value=0.25),
                    "length": slider([8, 24, 64, 128], "length L", value=24, fmt="{:d}")},
             alt="Attention weights of the last token and the causal bias matrix.")

The grid is the product of the controls' values, so keep it small: every state costs one matplotlib figure
(about 0.1 s and 10 to 30 kB of PNG).
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

__all__ = ["Control", "Explorer", "checkbox", "dropdown", "explorer", "slider"]

MAX_STATES = 400  # a guard against a grid that would take minutes to draw and megabytes to ship


@dataclass(frozen=True)
class Control:
    """One control of an explorer: its label, the values it steps through, the text it shows for each value
    (its readout, which the figure's title must contain), its kind ("slider", "dropdown" or "checkbox") and
    the index of its default value. Build it with ``slider``, ``dropdown`` or ``checkbox``."""

    label: str
    values: tuple
    texts: tuple[str, ...]
    kind: str
    default: int
    in_title: bool = True


def _default_index(values: Sequence, value: Any, label: str) -> int:
    if value is None:
        return 0
    for i, v in enumerate(values):
        if v == value:
            return i
    raise ValueError(f"control {label!r}: value={value!r} is not one of its values {list(values)}")


def slider(values: Sequence, label: str, *, value: Any = None, fmt: str = "{:g}", in_title: bool = True) -> Control:
    """A slider over ``values`` (in that order), reading ``fmt.format(v)``; starts at ``value`` (default: the
    first). ``in_title=False`` exempts it from the title check (only for a value the figure shows otherwise)."""
    values = tuple(values)
    if len(values) < 2:
        raise ValueError(f"slider {label!r}: needs at least 2 values, got {list(values)}")
    return Control(label, values, tuple(fmt.format(v) for v in values), "slider",
                   _default_index(values, value, label), in_title)


def dropdown(options: Sequence | Mapping[str, Any], label: str, *, value: Any = None,
             in_title: bool = True) -> Control:
    """A drop-down list: ``options`` is a sequence of values (shown as ``str(v)``) or a mapping from the text
    shown to the value passed to ``draw``. Starts at ``value`` (default: the first option)."""
    if isinstance(options, Mapping):
        texts, values = tuple(options), tuple(options.values())
    else:
        values = tuple(options)
        texts = tuple(str(v) for v in values)
    if not values:
        raise ValueError(f"dropdown {label!r}: needs at least one option")
    return Control(label, values, texts, "dropdown", _default_index(values, value, label), in_title)


def checkbox(label: str, off: str, on: str, *, value: bool = False, in_title: bool = True) -> Control:
    """A check box passing False or True to ``draw``; it reads ``off`` or ``on`` (texts the title shows)."""
    return Control(label, (False, True), (off, on), "checkbox", int(bool(value)), in_title)


def _titles(fig) -> str:
    """The figure's suptitle and every axes title, joined: the text a reader takes as the figure's title."""
    parts = [fig.get_suptitle()]
    for ax in fig.axes:
        parts += [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
    return " | ".join(p for p in parts if p.strip())


# TeX commands the figures' titles use, as the characters a screen reader reads aloud
_TEX_WORDS = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "theta": "θ", "lambda": "λ",
              "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ", "phi": "φ", "omega": "ω", "top": "ᵀ", "cdot": "·",
              "times": "×", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "approx": "≈", "infty": "∞",
              "ldots": "…", "dots": "…", "to": "→", "in": "∈", "pm": "±", "ell": "ℓ", "log": "log", "ln": "ln",
              "cos": "cos", "sin": "sin", "max": "max", "min": "min"}


def plain_text(title: str) -> str:
    r"""``title`` with its matplotlib math (``$...$``) written as plain characters, for an image's alt text: a
    screen reader would otherwise read the TeX source ("dollar, backslash, mathrm, ...").

    >>> plain_text(r"score $(R_{m+s}q)^\top(R_{n+s}k)$ = 0.5")
    'score (R_m+s q)ᵀ(R_n+s k) = 0.5'
    """
    def math(match):
        text = match.group(1)
        text = re.sub(r"\\(?:mathrm|mathbf|mathit|text|operatorname)\s*\{([^{}]*)\}", r"\1", text)
        text = re.sub(r"\\([A-Za-z]+)", lambda m: _TEX_WORDS.get(m.group(1), m.group(1)), text)
        text = re.sub(r"_\{([^{}]*)\}", r"_\1 ", text)  # a subscript group, ended by a space
        text = re.sub(r"\^\{?ᵀ\}?", "ᵀ", text)
        text = text.replace("{", "").replace("}", "").replace("\\", "")
        return re.sub(r" (?=[)\]ᵀ,])|  +", lambda m: "" if m.group() == " " else " ", text).strip()

    return re.sub(r"\$([^$]*)\$", math, title)


def _shows(title: str, text: str) -> bool:
    """Whether ``text`` stands in ``title`` as a whole (0.25 is not found in 0.255, 2 not in 12 or 2.5)."""
    return re.search(rf"(?<![\w.]){re.escape(text)}(?!\w|\.\d)", title) is not None


def _png(fig, dpi: float, colors: int) -> bytes:
    from PIL import Image

    # Raw pixels in one drawing pass (no tight bounding box: draw lays its figure out itself).
    buffer = io.BytesIO()
    fig.savefig(buffer, format="rgba", dpi=dpi, facecolor="white")
    size = (round(fig.get_figwidth() * dpi), round(fig.get_figheight() * dpi))
    image = Image.frombuffer("RGBA", size, buffer.getvalue()).convert("RGB")
    out = io.BytesIO()  # a palette of `colors` colours: about a third of the bytes, no visible change
    image.quantize(colors=colors, method=Image.Quantize.FASTOCTREE).save(out, "PNG")
    return out.getvalue()


@dataclass(frozen=True)
class Explorer:
    """What ``explorer`` returns: ``html`` (the output cell), and per state of the grid (row-major over the
    controls, the last control fastest) the index of its picture in ``images`` and its ``titles``."""

    controls: tuple[tuple[str, Control], ...]
    alt: str
    images: tuple[str, ...]  # data: URIs, one per distinct picture
    states: tuple[int, ...]
    titles: tuple[str, ...]

    @property
    def default_state(self) -> int:
        index = 0
        for _, control in self.controls:
            index = index * len(control.values) + control.default
        return index

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        names = ", ".join(name for name, _ in self.controls)
        return f"<Explorer of {len(self.states)} states over {names}: {self.titles[self.default_state]}>"

    @property
    def html(self) -> str:
        default = self.default_state
        data = {"alt": self.alt, "images": list(self.images), "states": list(self.states),
                "titles": list(self.titles), "alts": [plain_text(t) for t in self.titles],
                "sizes": [len(c.values) for _, c in self.controls],
                "texts": [list(c.texts) for _, c in self.controls]}
        payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
        controls = "".join(_control_html(i, name, control) for i, (name, control) in enumerate(self.controls))
        image = self.images[self.states[default]]
        title = self.titles[default]
        return (f'<div class="posenc-explorer">{STYLE}'
                f'<div class="posenc-explorer-controls">{controls}</div>'
                f'<img class="posenc-explorer-frame" src="{image}" alt="{html.escape(self.alt + " Shown: " + plain_text(title))}"'
                f' data-title="{html.escape(title)}" data-state="{default}">'
                f'<script type="application/json" class="posenc-explorer-data">{payload}</script>'
                f'<script>{SCRIPT}</script></div>')


def _control_html(index: int, name: str, control: Control) -> str:
    label = html.escape(control.label)
    # data-lm-suppress-shortcuts: JupyterLab leaves the keys pressed on a control (arrows) to the control.
    attrs = (f'data-control="{index}" data-name="{html.escape(name)}"'
             f' data-in-title="{str(control.in_title).lower()}" data-lm-suppress-shortcuts="true" disabled')
    readout = f'<output class="posenc-explorer-readout">{html.escape(control.texts[control.default])}</output>'
    if control.kind == "slider":
        widget = (f'<input type="range" min="0" max="{len(control.values) - 1}" step="1" value="{control.default}"'
                  f' aria-valuetext="{html.escape(control.texts[control.default])}" {attrs}>')
        return f'<label class="posenc-explorer-control"><span>{label}</span>{widget}{readout}</label>'
    if control.kind == "checkbox":
        checked = " checked" if control.default else ""
        widget = f'<input type="checkbox"{checked} {attrs}>'
        return f'<label class="posenc-explorer-control">{widget}<span>{label}:</span>{readout}</label>'
    options = "".join(f'<option value="{i}"{" selected" if i == control.default else ""}>{html.escape(t)}</option>'
                      for i, t in enumerate(control.texts))
    return f'<label class="posenc-explorer-control"><span>{label}</span><select {attrs}>{options}</select></label>'


STYLE = ("<style>.posenc-explorer-controls{display:flex;flex-wrap:wrap;gap:.3rem 1.4rem;align-items:center;"
         "margin:.2rem 0 .5rem;font-size:.9em}.posenc-explorer-control{display:inline-flex;align-items:center;"
         "gap:.45rem;max-width:100%;margin:0}.posenc-explorer-control input[type=range]{width:10rem;"
         "max-width:40vw}.posenc-explorer-readout{min-width:3.5em;font-variant-numeric:tabular-nums}"
         ".posenc-explorer-control select{max-width:60vw}"
         "img.posenc-explorer-frame{display:block;max-width:100%;height:auto}</style>")

# Reads the state of the controls, shows that state's picture, title and readouts. Runs once per output.
SCRIPT = """(function (script) {
  var root = script && script.parentNode;
  if (!root) { return; }
  var data = JSON.parse(root.querySelector("script.posenc-explorer-data").textContent);
  var img = root.querySelector("img.posenc-explorer-frame");
  var controls = Array.prototype.slice.call(root.querySelectorAll("[data-control]"));
  function position(el) {
    return el.type === "checkbox" ? (el.checked ? 1 : 0) : parseInt(el.value, 10);
  }
  function update() {
    var state = 0;
    controls.forEach(function (el, i) {
      var k = position(el);
      state = state * data.sizes[i] + k;
      var texts = data.texts[i], out = el.parentNode.querySelector("output");
      if (out) { out.textContent = texts[k]; }
      if (el.type === "range") { el.setAttribute("aria-valuetext", texts[k]); }
    });
    var title = data.titles[state];
    img.src = data.images[data.states[state]];
    img.alt = data.alt + " Shown: " + data.alts[state];
    img.setAttribute("data-title", title);
    img.setAttribute("data-state", String(state));
  }
  controls.forEach(function (el) {
    el.disabled = false;
    el.addEventListener("input", update);
    el.addEventListener("change", update);
  });
  root.setAttribute("data-live", "true");
})(document.currentScript);"""


def explorer(draw: Callable[..., Any], controls: Mapping[str, Control], *, alt: str, dpi: float = 100,
             colors: int = 128) -> Explorer:
    """Draw ``draw(**values)`` for every combination of the controls' values and return an explorer that
    shows the picture of whatever the controls are set to, without a kernel.

    Args:
        draw: called once per state with one keyword argument per control (the parameter names of
            ``controls``); returns a matplotlib Figure, which ``explorer`` saves and closes. Its title
            (suptitle and axes titles together) must contain the readout text of every control whose
            ``in_title`` is true, as a whole word: a check that the figure and the controls agree.
        controls: parameter name -> ``slider(values, label, value=, fmt=)``, ``dropdown(options, label,
            value=)`` or ``checkbox(label, off, on, value=)``, in the order they are shown. The grid is the
            product of their values: at most 400 states (each is one figure to draw).
        alt: what the figure shows, for screen readers; the current title is appended to it.
        dpi, colors: resolution of the pictures and the size of their palette (PNG, quantised).

    Returns:
        an ``Explorer``; as the last expression of a cell it displays as HTML (``IPython.display.display``
        works too). Raises ValueError for an empty or oversized grid, a draw that does not return a Figure,
        or a title that does not show a control's value.
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    items = tuple(controls.items())
    if not items:
        raise ValueError("explorer: controls is empty; give at least one slider, dropdown or checkbox")
    for name, control in items:
        if not isinstance(control, Control):
            raise TypeError(f"explorer: control {name!r} is a {type(control).__name__}; build it with slider, "
                            "dropdown or checkbox")
    count = 1
    for _, control in items:
        count *= len(control.values)
    if count > MAX_STATES:
        sizes = " x ".join(f"{name} {len(c.values)}" for name, c in items)
        raise ValueError(f"explorer: {sizes} = {count} states, more than {MAX_STATES}; use fewer values")
    images: dict[bytes, int] = {}
    states, titles = [], []
    for combination in itertools.product(*(range(len(c.values)) for _, c in items)):
        values = {name: c.values[k] for (name, c), k in zip(items, combination)}
        fig = draw(**values)
        if not isinstance(fig, Figure):
            plt.close("all")
            raise ValueError(f"explorer: draw({values}) returned {type(fig).__name__}, not a matplotlib Figure "
                             "(end draw with `return fig` instead of plt.show())")
        title = _titles(fig)
        missing = [f"{c.label!r} reads {c.texts[k]!r}" for (name, c), k in zip(items, combination)
                   if c.in_title and not _shows(title, c.texts[k])]
        if missing:
            plt.close(fig)
            raise ValueError(f"explorer: for {values} the figure's title {title!r} does not show what the "
                             f"controls read: {'; '.join(missing)}")
        png = _png(fig, dpi, colors)
        plt.close(fig)
        states.append(images.setdefault(png, len(images)))
        titles.append(title)
    uris = tuple("data:image/png;base64," + base64.b64encode(png).decode() for png in images)
    return Explorer(items, alt, uris, tuple(states), tuple(titles))
