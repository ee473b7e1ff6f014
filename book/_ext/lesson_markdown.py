"""The lessons' text as a student reads it in JupyterLab, Jupyter or Colab: MyST's roles and directives written
as the plain Markdown and HTML every Jupyter renders, while the book keeps the MyST it was written in.

The chapters are MyST (citations, glossary terms, cross-references, numbered equations, numbers glued from the
code). Only the book renders that; a notebook interface shows ``{cite}`vaswani2017attention``` as typed. So
``make lessons`` (tools/lessons.py) writes each markdown cell of a lesson in readable form and
keeps the MyST source beside it, in the cell's metadata (``metadata.posenc.myst``); the book reads the MyST back
(book/_ext/lesson_source.py, Sphinx's ``source-read``), so the pages are built from exactly what was written.

What each becomes (:func:`readable`):

- ``{cite}`a,b``` -> "[Press et al., 2022; Su et al., 2021]", ``{cite:t}`a``` -> "Press et al. [2022]": the
  book's author-year labels (book/references.bib).
- ``{term}`text <Term>``` -> "text"; ``{ref}`label``` -> the section's title, ``{ref}`text <label>``` -> "text";
  ``{doc}`` likewise.
- ``$$ ... $$ (label)`` -> the equation with ``\\tag{n}``, the number the book gives it (it numbers equations
  across its pages in the table of contents' order);
  ``{eq}`label``` -> "(n)".
- ``{numref}`fig-x``` -> "the figure above" or "below" (the book numbers figures across the whole book, which a
  single notebook cannot know).
- ``{glue:text}`name:.3f``` -> ``name`` in code: the value the cells above compute (the first markdown cell
  says so), since a lesson is not executed when it is made.
- A ```` ```{admonition} Title ```` block -> a quotation with the title in bold; a ``(label)=`` target line is
  dropped.

Cells that nbgrader owns (a written answer's cell) are left as they are: their checksums are nbgrader's.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is book/_ext/lesson_markdown.py)
BIBLIOGRAPHY = ROOT / "book" / "references.bib"
KEY = "posenc"  # the cell metadata namespace: metadata.posenc.myst holds the MyST source
GLUE_NOTE = ("*In this notebook, a name in code font inside the text, like `this`, stands for a number the code "
             "computes: the cell that computes it hands it to `glue(\"this\", ...)`, and the book prints its value "
             "in its place.*")

ROLE = re.compile(r"\{(?P<role>[a-z]+(?::[a-z]+)?)\}`(?P<body>[^`]*)`")
TARGET_LINE = re.compile(r"^\((?P<label>[A-Za-z0-9_:.-]+)\)=[ \t]*\n?", re.M)
HEADING = re.compile(r"^#{1,6}[ \t]+(?P<title>.+?)[ \t]*$", re.M)
EQUATION = re.compile(r"\$\$(?P<math>(?:(?!\$\$).)+?)\$\$[ \t]*\((?P<label>[A-Za-z0-9_:.-]+)\)", re.S)
ADMONITION = re.compile(r"^(?P<fence>`{3,}|:{3,})\{admonition\}[ \t]*(?P<title>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                        re.M | re.S)
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
MYST = re.compile(r"\{[a-z]+(?::[a-z]+)?\}`|\$\$[ \t]*\(|^\([A-Za-z0-9_:.-]+\)=|\{admonition\}", re.M)


@dataclass
class Context:
    """What converting one chapter needs to know: each citation key's label, each section label's title, each
    equation label's number (the chapter's order), and where each figure label sits (its cell's index)."""

    citations: dict = field(default_factory=dict)
    sections: dict = field(default_factory=dict)
    equations: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)


def _explicit(body: str) -> tuple[str | None, str]:
    """A role's ``text <target>`` as (text, target); a bare target as (None, target)."""
    match = EXPLICIT.match(body)
    return (match["text"], match["target"]) if match else (None, body.strip())


def _cite(role: str, body: str, context: Context) -> str:
    keys = [k.strip() for k in body.split(",") if k.strip()]
    missing = [k for k in keys if k not in context.citations]
    if missing:
        raise KeyError(f"citation keys {missing} are not in {BIBLIOGRAPHY.name}")
    labels = [context.citations[k] for k in keys]
    if role == "cite:t":  # "Press et al. [2022]"
        return "; ".join(f"{label.rsplit(', ', 1)[0]} [{label.rsplit(', ', 1)[-1]}]" for label in labels)
    return "[" + "; ".join(labels) + "]"


def _role(match: re.Match, context: Context, cell_index: int) -> str:
    role, body = match["role"], match["body"]
    if role in ("cite", "cite:p", "cite:t", "cite:ps", "cite:ts"):
        return _cite("cite:t" if role.startswith("cite:t") else "cite", body, context)
    if role == "glue:text" or role == "glue" or role.startswith("glue:"):
        return f"`{body.split(':', 1)[0].strip()}`"
    text, target = _explicit(body)
    if role == "term":
        return text or target
    if role in ("ref", "doc"):
        return text or context.sections.get(target, target.replace("-", " "))
    if role == "eq":  # an equation of another page has no number here (the book checks that it exists)
        return f"({context.equations[target]})" if target in context.equations else "an equation of the book"
    if role == "numref":
        if text and "%s" not in text and "{number}" not in text:
            return text
        where = context.figures.get(target)
        if where is None:
            return "a figure of the book"
        return "the figure above" if where < cell_index else "the figure below"
    if role == "math":
        return f"${body}$"
    return text or target  # any other role: its text


def _admonition(match: re.Match) -> str:
    body = re.sub(r"^:[a-z-]+:.*\n", "", match["body"], flags=re.M).strip("\n")
    lines = [f"**{match['title'].strip()}**", ""] + body.splitlines()
    return "\n".join(f"> {line}".rstrip() for line in lines)


def readable(source: str, context: Context, cell_index: int = 0) -> str:
    """One markdown cell's MyST ``source`` written as Markdown any Jupyter renders (see the module)."""
    text = ADMONITION.sub(_admonition, source)
    text = EQUATION.sub(lambda m: f"$${m['math'].rstrip()} \\tag{{{context.equations[m['label']]}}}$$", text)
    text = TARGET_LINE.sub("", text)
    return ROLE.sub(lambda m: _sentence_case(_role(m, context, cell_index), m.string, m.start()), text)


def _sentence_case(words: str, text: str, at: int) -> str:
    """``words`` with a capital first letter where they start a sentence (a role's replacement such as "the
    figure below" may begin one)."""
    before = text[:at].rstrip(" \t*_")
    starts = before == "" or before[-1] in ".!?\n" or re.search(r"(^|\n)\s*([-+*]|\d+\.)$", before)
    return words[:1].upper() + words[1:] if starts and words[:1].islower() else words


def has_myst(source: str) -> bool:
    return MYST.search(source) is not None


@lru_cache(maxsize=1)
def citation_labels() -> dict:
    """Each key of book/references.bib and its author-year label, made by the book's own bibliography style
    (book/_ext/bibliography.py: its template, its order, its a/b for equal labels; the bibliography lists every
    entry, so labelling them all gives the book's labels)."""
    import importlib.util

    from pybtex.database import parse_file

    spec = importlib.util.spec_from_file_location("posenc_book_bibliography",
                                                  Path(__file__).with_name("bibliography.py"))
    bibliography = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bibliography)
    ordered = sorted(parse_file(str(BIBLIOGRAPHY)).entries.values(),
                     key=bibliography.AuthorYearSorting().sorting_key)
    return {entry.key: label for entry, label in zip(ordered, bibliography.AuthorYearLabels().format_labels(ordered))}


def section_titles(texts: list[str]) -> dict:
    """``(label)=`` targets followed by a heading, in the given markdown texts: label -> the heading's text."""
    out = {}
    for text in texts:
        for match in TARGET_LINE.finditer(text):
            heading = HEADING.match(text, match.end())
            if heading:
                out[match["label"]] = ROLE.sub(lambda m: _explicit(m["body"])[0] or _explicit(m["body"])[1],
                                               heading["title"])
    return out


@lru_cache(maxsize=1)
def book_sections() -> dict:
    """Section labels across the chapters and the book's pages."""
    texts = [p.read_text() for p in sorted((ROOT / "solutions").glob("*/*.md"))]
    texts += [p.read_text() for p in sorted((ROOT / "book").glob("*.md"))]
    return section_titles(texts)


def equations_before(name: str) -> int:
    """How many numbered equations the book has before chapter ``name``: the book numbers equations across
    its pages in the order of _toc.yml, so a lesson's first is that number plus one."""
    import yaml

    def files(entries):
        for entry in entries:
            if "file" in entry:
                yield entry["file"]
            yield from files(entry.get("chapters", []))

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    count = 0
    for page in [toc["root"], *files(toc.get("parts", [])), *files(toc.get("chapters", []))]:
        parts = page.split("/")
        if parts[0] == "lessons" and parts[1] == name:
            return count
        source = ROOT / "solutions" / parts[1] / f"{parts[1]}.md" if parts[0] == "lessons" else ROOT / f"{page}.md"
        if source.is_file():
            count += len({m["label"] for m in EQUATION.finditer(source.read_text())})
    return count


def chapter_context(nb, name: str | None = None) -> Context:
    """The context of one chapter's notebook: its equations numbered as the book numbers them (after those of
    the pages before it), its figures' cells."""
    equations, figures = {}, {}
    first = equations_before(name) if name else 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for match in EQUATION.finditer(cell.source):
                equations.setdefault(match["label"], first + len(equations) + 1)
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if figure.get("name"):
            figures[figure["name"]] = index
    return Context(citations=citation_labels(), sections=book_sections(), equations=equations, figures=figures)


def make_readable(nb, name: str | None = None) -> None:
    """Write every markdown cell of the lesson ``nb`` that holds MyST in readable form, in place, keeping the
    MyST in ``metadata.posenc.myst``; the first markdown cell says what a name in code font stands for when a
    number was glued. Cells nbgrader owns are left alone."""
    context = chapter_context(nb, name)
    glued = False
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or cell.get("metadata", {}).get("nbgrader") or not has_myst(cell.source):
            continue
        glued = glued or "{glue" in cell.source
        cell.metadata.setdefault(KEY, {})["myst"] = cell.source
        cell.source = readable(cell.source, context, index)
    if glued:
        first = next((c for c in nb.cells if c.cell_type == "markdown" and not c.get("metadata", {}).get("nbgrader")),
                     None)
        if first is not None:
            original = first.metadata.get(KEY, {}).get("myst", first.source)
            first.metadata.setdefault(KEY, {})["myst"] = original
            first.source = first.source.rstrip("\n") + "\n\n" + GLUE_NOTE


def restore(nb_json: dict) -> dict:
    """The notebook (as JSON) with every cell's MyST source back, as the book reads it."""
    nb = copy.deepcopy(nb_json)
    for cell in nb.get("cells", []):
        myst = cell.get("metadata", {}).get(KEY, {}).get("myst")
        if myst is not None:
            cell["source"] = myst
            del cell["metadata"][KEY]["myst"]
            if not cell["metadata"][KEY]:
                del cell["metadata"][KEY]
    return nb
