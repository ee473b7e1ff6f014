"""The bibliography as a reader of an author-year text expects it (sphinxcontrib-bibtex styles, registered here).

- **Labels are the citations.** The text cites "[Press et al., 2022]" (``bibtex_reference_style``); the
  bibliography's entry carries the same label instead of sphinxcontrib-bibtex's alphabetic "[PSL22]". Both are
  made by sphinxcontrib-bibtex's own author-year template, so they cannot drift apart. Two works with the same
  authors and year get "2023a" and "2023b", in the label and in every citation of them.
- **Sorted** by that label (first author's name, accents and case ignored), then year, arXiv id and title.
- **arXiv ids are links.** An entry that names its preprint as "arXiv:2108.12409" (in ``note``, ``journal`` or
  ``howpublished``) is given BibTeX's ``eprint`` field, which pybtex's style renders as a link to arxiv.org;
  ``doi`` fields are links already.
- **Back-references.** Sphinx makes no link from a bibliography to citations on other pages; each entry gets a
  line "Cited in: chapter, chapter", each a link to the place of the first citation on that page.

_config.yml selects the styles: ``bibtex_default_style: posenc`` and ``bibtex_reference_style: posenc``.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections import Counter
from types import SimpleNamespace

import pybtex.plugin
from docutils import nodes
from pybtex.database import Entry
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle
from pybtex.style.template import node
from sphinx.application import Sphinx
from sphinx.util.osutil import relative_uri
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
    BasicAuthorYearParentheticalReferenceStyle,
    BasicAuthorYearTextualReferenceStyle,
)
from sphinxcontrib.bibtex.style.referencing.extra_year import ExtraYearReferenceStyle
from sphinxcontrib.bibtex.style.template import join, join2, post_text, pre_text, reference
from sphinxcontrib.bibtex.style.template import year as year_field

NAME = "posenc"
ARXIV = re.compile(r"arXiv:\s*(\d{4}\.\d{4,5})(v\d+)?")
AUTHOR_YEAR_SEP = ", "


# --- Labels, sorting and arXiv links: the pybtex formatting style ----------------------------------------------

def author_year(entry: Entry, person: PersonStyle = PersonStyle()) -> str:
    """What an author-year citation of ``entry`` reads, without brackets: "Press et al., 2022"."""
    template = join(sep=AUTHOR_YEAR_SEP)[person.author_or_editor_or_title(full=False), year_field]
    return template.format_data({"entry": entry, "style": SimpleNamespace(person=person)}).render_as("text")


def _sort_text(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


class AuthorYearLabels(BaseLabelStyle):
    """The label of an entry is its author-year citation; equal ones get a, b, ... in the order of the list."""

    def format_labels(self, sorted_entries):
        labels = [author_year(entry) for entry in sorted_entries]
        repeated, seen = Counter(labels), Counter()
        for label in labels:
            if repeated[label] > 1:
                seen[label] += 1
                label += "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            yield label


class AuthorYearSorting(BaseSortingStyle):
    """By the label's names, then year; works of the same names and year by arXiv id (the earlier preprint
    first), then title."""

    def sorting_key(self, entry):
        return (_sort_text(author_year(entry).rsplit(AUTHOR_YEAR_SEP, 1)[0]), entry.fields.get("year", ""),
                with_eprint(entry).fields.get("eprint", ""), _sort_text(entry.fields.get("title", "")))


def with_eprint(entry: Entry) -> Entry:
    """``entry`` with the arXiv id its text mentions as an ``eprint`` field (and the mention removed, so that the
    entry names it once, as a link). Entries with an ``eprint`` or without an arXiv id are returned as they are."""
    if "eprint" in entry.fields:
        return entry
    for name in ("note", "journal", "howpublished"):
        match = ARXIV.search(entry.fields.get(name, ""))
        if match:
            break
    else:
        return entry
    fields = dict(entry.fields)
    fields["eprint"] = match.group(1)
    rest = ARXIV.sub("", fields[name]).strip(" ,;")
    rest = re.sub(r"^\(\d{4}\)$", "", rest).strip()  # "arXiv:1809.04281 (2018)": the year is the entry's own
    if name == "journal" and rest.lower() == "arxiv preprint":
        rest = "arXiv preprint"
    if rest:
        fields[name] = rest
    else:
        del fields[name]
    copy = Entry(entry.type, fields=fields, persons=entry.persons)
    copy.key = entry.key
    return copy


class Style(UnsrtStyle):
    default_label_style = AuthorYearLabels
    default_sorting_style = AuthorYearSorting

    def format_entry(self, label, entry, bib_data=None):
        return super().format_entry(label, with_eprint(entry), bib_data=bib_data)


# --- The citations in the text: author-year, with the label's a/b ---------------------------------------------

@node
def label_year(children, data):
    """The year as the entry's label shows it ("2023a" when two works share authors and year)."""
    assert not children
    return Text(data["formatted_entry"].label.rsplit(AUTHOR_YEAR_SEP, 1)[-1])


@dataclasses.dataclass
class _Parenthetical(BasicAuthorYearParentheticalReferenceStyle):
    def inner(self, role_name):
        return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
            pre_text,
            reference[join(sep=self.author_year_sep)[
                self.person.author_or_editor_or_title(full="s" in role_name), label_year]],
            post_text,
        ]


@dataclasses.dataclass
class _Textual(BasicAuthorYearTextualReferenceStyle):
    def inner(self, role_name):
        return join(sep=self.text_reference_sep)[
            self.person.author_or_editor_or_title(full="s" in role_name),
            join[self.bracket.left,
                 join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[pre_text, reference[label_year], post_text],
                 self.bracket.right],
        ]


@dataclasses.dataclass
class _Year(ExtraYearReferenceStyle):
    def inner(self, role_name):
        return reference[label_year]


@dataclasses.dataclass
class ReferenceStyle(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's author-year citations, whose year is the label's (with its a/b)."""

    def __post_init__(self):
        super().__post_init__()
        replace = {BasicAuthorYearParentheticalReferenceStyle: _Parenthetical,
                   BasicAuthorYearTextualReferenceStyle: _Textual, ExtraYearReferenceStyle: _Year}
        for i, style in enumerate(self.styles):
            if type(style) in replace:
                self.styles[i] = replace[type(style)](**{f.name: getattr(style, f.name)
                                                          for f in dataclasses.fields(style) if f.init})
        self.role_style.clear()  # the role table again, now pointing at the replacements
        self.role_style.update((role, style) for style in self.styles for role in style.role_names())


# --- Back-references ------------------------------------------------------------------------------------------

def add_backrefs(app: Sphinx, doctree, docname: str) -> None:
    domain = app.env.get_domain("cite")
    entries = [n for n in doctree.findall(nodes.citation) if n.get("docname") == docname]
    if not entries:
        return
    order = {name: i for i, name in enumerate(_reading_order(app))}
    for entry in entries:
        key = next((c.key for c in domain.citations if c.citation_id in entry["ids"]), None)
        first: dict[str, str] = {}
        for ref in domain.citation_refs:
            if key in {target.key for target in ref.targets} and ref.docname not in first:
                first[ref.docname] = ref.citation_ref_id
        if not first:
            continue
        para = nodes.paragraph(classes=["posenc-backrefs"])
        para += nodes.Text("Cited in: ")
        for i, (page, ref_id) in enumerate(sorted(first.items(), key=lambda kv: order.get(kv[0], len(order)))):
            if i:
                para += nodes.Text(", ")
            title = app.env.titles[page].astext() if page in app.env.titles else page
            uri = relative_uri(app.builder.get_target_uri(docname), app.builder.get_target_uri(page)) + "#" + ref_id
            para += nodes.reference("", title, internal=True, refuri=uri)
        para += nodes.Text(".")
        entry += para


def _reading_order(app: Sphinx) -> list[str]:
    """The pages in the order of the table of contents (the root first)."""
    toctree = app.env.toctree_includes
    order, stack = [], [app.config.root_doc]
    while stack:
        page = stack.pop(0)
        if page not in order:
            order.append(page)
            stack[:0] = toctree.get(page, [])
    return order


def setup(app: Sphinx):
    pybtex.plugin.register_plugin("pybtex.style.formatting", NAME, Style)
    register_plugin("sphinxcontrib.bibtex.style.referencing", NAME, ReferenceStyle)
    app.connect("doctree-resolved", add_backrefs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
