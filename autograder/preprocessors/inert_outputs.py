"""``InertOutputs``: the autograded notebook holds nothing a browser would run.

formgrader (in JupyterLab, logged in as the instructor) and the student's feedback page are both rendered by
nbconvert from the autograded notebook, and nbconvert puts a ``text/html`` output, a ``text/markdown``
output and the raw HTML of a markdown cell into the page as they are: a student's
``display(HTML("<script>..."))`` or ``<img src=x onerror=...>`` in a written answer then runs as the
instructor, on the server's origin, and can read ``solutions/`` through the contents API. So the last step
of autograde (after ``LimitOutput``, before the grades are saved) makes the notebook inert:

* Code cells keep only inert outputs: ``stream`` text, ``error`` (name, value, traceback as text), and in
  ``display_data`` / ``execute_result`` the ``text/plain`` text and ``image/png`` / ``image/jpeg`` images
  that are valid base64 of a real PNG/JPEG of at most ``max_image_bytes``. Every other MIME type
  (``text/html``, ``application/javascript``, ``image/svg+xml``, ``text/markdown``, ``text/latex``, widget
  views, JSON, anything custom) is removed and a ``text/plain`` note says so: the note replaces an output
  left with nothing, and follows an output that keeps its ``text/plain`` (repeated notes are counted, not
  repeated). Output ``metadata`` is cleared (nbconvert reads image sizes and the "isolated" flag from it).
  The grades do not change: nbgrader scores a test cell from its errors, its stderr and the ``text/plain``
  of its result, which all stay.
* Markdown cells: raw HTML does not survive as HTML. A cell whose rendering (by nbconvert's own Markdown
  renderer, the one formgrader and the feedback use) holds no raw HTML and no link or image with a scheme
  other than http(s)/mailto (or data:/attachment: images) is left exactly as it is, so ordinary answers and
  their LaTeX are untouched. Otherwise each ``<`` outside code spans, fenced code and math is written
  ``&lt;``: the browser shows the tag as text and the rest of the answer (Markdown, ``$...$`` maths) renders
  as before. Escaping every ``<`` of the source instead would break maths (nbconvert already escapes what
  is between ``$``: ``$a<b$`` would show ``&lt;``) and code. The result is checked again with the same
  renderer; if anything unsafe is left (a ``javascript:`` link, a ``mermaid`` block, which nbconvert does
  not escape, a missing attachment), the whole answer is shown as plain text in a code block, with a note.
* Attachments of markdown cells keep only PNG, JPEG and GIF images (valid base64 of such a file, at most
  ``max_image_bytes``); SVG and everything else is dropped.
* The notebook's saved widget state (``metadata.widgets``, written by the kernel run) is removed.

The grader's pages are also built with nbconvert's ``HTMLExporter.sanitize_html`` (nbgrader_config.py): a
second layer for outputs of notebooks autograded before this step existed. It does not cover markdown
cells (nbgrader's templates render them without it) and would garble them anyway (bleach escapes ``<p>``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from html.parser import HTMLParser

from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

NOTE = "[{what} removed by the grader: students' HTML and scripts are not shown]"
MARKDOWN_NOTE = ("*The grader shows this cell as plain text: it held something that could run in the grader's "
                 "browser (HTML, a script link) or that does not render (a missing attachment).*")

OUTPUT_IMAGES = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",)}
ATTACHMENT_IMAGES = {**OUTPUT_IMAGES, "image/gif": (b"GIF87a", b"GIF89a")}
MAX_IMAGE_BYTES = 5_000_000
MAX_MARKDOWN_CHARS = 100_000  # a longer markdown cell is shown as plain text without being parsed


# ---------------------------------------------------------------------------------------------------------
# Outputs

def _text(value) -> str | None:
    """A text payload: a string, or a list of strings (nbformat's multi-line form); None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return None


def valid_image(value, mime: str, max_bytes: int = MAX_IMAGE_BYTES, kinds=OUTPUT_IMAGES) -> str | None:
    """The base64 text of an image if ``value`` is base64 (whitespace allowed) of a file of that type, at most
    ``max_bytes`` long; None otherwise."""
    text = _text(value)
    if text is None or mime not in kinds:
        return None
    text = re.sub(r"\s+", "", text)
    if not text or len(text) > (max_bytes + 2) // 3 * 4:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(data) > max_bytes or not data.startswith(kinds[mime]):
        return None
    return text


def _mime_label(mime) -> str:
    """A MIME type as the note names it (the key is the student's: only harmless characters, short)."""
    label = re.sub(r"[^A-Za-z0-9.+/_-]", "?", str(mime))[:60]
    return label or "?"


def _describe(removed: list[str]) -> str:
    """``text/html, image/svg+xml output``: what a note says was removed."""
    labels = []
    for mime in removed:
        label = (mime[:8] + _mime_label(mime[8:])) if mime.startswith("invalid ") else _mime_label(mime)
        if label not in labels:
            labels.append(label)
    if len(labels) > 4:
        labels = labels[:4] + [f"{len(labels) - 4} more"]
    return ", ".join(labels) + " output"


def note_output(what: str, count: int = 1):
    """The text/plain note that stands for removed output (``count`` outputs in a row)."""
    text = NOTE.format(what=what) + (f" (x{count})" if count > 1 else "")
    return new_output("display_data", data={"text/plain": text})


def _inert_output(output, max_image_bytes: int) -> list[tuple]:
    """``(output, what)`` pairs that stand for one output: ``(None, what)`` asks for a note on the MIME types
    ``what``; ``(output, None)`` is an output kept; ``(output, "")`` is an execute_result turned into a note."""
    kind = output.get("output_type") if isinstance(output, dict) else None
    if kind == "stream":
        text = _text(output.get("text"))
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        if text is None:
            return [(None, "a stream output that is not text")]
        return [(new_output("stream", name=name, text=text), None)]
    if kind == "error":
        traceback = output.get("traceback")
        if not isinstance(traceback, list):
            traceback = [] if traceback is None else [traceback]
        return [(new_output("error", ename=str(output.get("ename", "")), evalue=str(output.get("evalue", "")),
                            traceback=[line if isinstance(line, str) else str(line) for line in traceback]), None)]
    if kind not in ("display_data", "execute_result"):
        return [(None, f"an output of unknown kind {_mime_label(kind)!r}")]
    data = output.get("data")
    kept, removed = {}, []
    for mime, value in (data.items() if isinstance(data, dict) else ()):
        if mime == "text/plain" and _text(value) is not None:
            kept[mime] = _text(value)
        elif mime in OUTPUT_IMAGES and valid_image(value, mime, max_image_bytes) is not None:
            kept[mime] = valid_image(value, mime, max_image_bytes)
        else:
            removed.append(f"invalid {mime}" if mime in OUTPUT_IMAGES or mime == "text/plain" else mime)
    what = _describe(removed) if removed else None
    if kind == "display_data":
        if not kept:
            return [(None, what)] if what else []  # an empty display shows nothing either way
        return [(new_output("display_data", data=kept), None)] + ([(None, what)] if what else [])
    # An execute_result stays one (nbgrader reads a test cell's result), with the note as its text if need be.
    count = output.get("execution_count")
    count = count if isinstance(count, int) and not isinstance(count, bool) else None
    if not kept and not what:
        return [(new_output("execute_result", data={}, execution_count=count), None)]
    if not kept:  # the note is the result's text
        return [(new_output("execute_result", data=dict(note_output(what).data), execution_count=count), "")]
    return [(new_output("execute_result", data=kept, execution_count=count), None)] + ([(None, what)] if what else [])


def inert_outputs(outputs, max_image_bytes: int = MAX_IMAGE_BYTES) -> tuple[list, int]:
    """A code cell's outputs made inert, and the number of notes standing for removed output. A run of notes
    on the same MIME types becomes one note with a count."""
    result, notes, last = [], 0, None  # last: (what, count) of the note output that ends ``result``
    for output in outputs if isinstance(outputs, list) else []:
        for new, what in _inert_output(output, max_image_bytes):
            if new is not None:  # an output kept, or an execute_result whose text is the note (what == "")
                result.append(new)
                notes += what is not None
                last = None
            elif last is not None and last[0] == what:
                last = (what, last[1] + 1)
                result[-1] = note_output(*last)
                notes += 1
            else:
                last = (what, 1)
                result.append(note_output(what))
                notes += 1
    return result, notes


# ---------------------------------------------------------------------------------------------------------
# Markdown

def render_markdown(source: str, attachments: dict | None = None) -> str:
    """The HTML nbconvert's HTMLExporter (formgrader, feedback) makes of a markdown cell."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    return MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments or {})).render(source)


def _markdown_tokens(source: str) -> list:
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    return MarkdownWithMath(renderer=None)(source)


_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")
_DATA_IMAGE = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,[a-z0-9+/=]*$")


def safe_url(url, image: bool = False) -> bool:
    """A link target that runs nothing: no scheme (relative, #fragment) or http(s)/mailto; for images also
    base64 data of a raster image and notebook attachments. Control characters and blanks are dropped first,
    as browsers do (``java\\tscript:``)."""
    if not isinstance(url, str):
        return False
    url = re.sub(r"[\x00-\x20\x7f]", "", url).lower()
    scheme = _SCHEME.match(url)
    if scheme is None:
        return ":" not in url.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if scheme.group(1) in ("http", "https", "mailto"):
        return True
    return image and (scheme.group(1) == "attachment" or bool(_DATA_IMAGE.match(url)))


def _unsafe_tokens(tokens) -> list[str]:
    found = []
    for token in tokens:
        kind = token.get("type")
        attrs = token.get("attrs") or {}
        if kind in ("inline_html", "block_html"):
            if not _course_html(token.get("raw", "")):
                found.append(f"raw HTML {token.get('raw', '')[:40]!r}")
        elif kind in ("link", "image") and not safe_url(attrs.get("url"), image=kind == "image"):
            found.append(f"{kind} to {str(attrs.get('url'))[:40]!r}")
        elif kind == "block_code" and str(attrs.get("info") or "").strip().startswith("mermaid"):
            found.append("mermaid block")
        found += _unsafe_tokens(token.get("children") or [])
    return found


# The tags and attributes nbconvert's Markdown renderer writes for Markdown, and the course's self-check form
# (details, summary, a div's id: see _COURSE_TAGS), no other raw HTML.
_TAGS = {
    **{t: set() for t in ("p", "em", "strong", "del", "blockquote", "ul", "hr", "br", "table", "thead",
                          "tbody", "tr", "dl", "dt", "dd", "details", "summary")},
    **{f"h{i}": {"id"} for i in range(1, 7)},
    "a": {"href", "title", "class"}, "img": {"src", "alt", "title"}, "code": {"class"}, "pre": {"class"},
    "div": {"class", "id"}, "span": {"class"}, "ol": {"start"}, "li": {"class"}, "th": {"style"}, "td": {"style"},
    "input": {"class", "type", "disabled", "checked"},
}
_STYLE = re.compile(r"^text-align:\s*(left|right|center)$")
# The one piece of raw HTML the chapters write (solutions/README.md, "Self-check questions"): a question as
# <div class="selfcheck" id="selfcheck-..."> holding <details><summary>option</summary> explanation </details>.
# Nothing else raw passes: no other tag, no other attribute, no other value of these two.
_COURSE_TAGS = {"div": {"class", "id"}, "details": set(), "summary": set()}
_COURSE_VALUES = {"class": re.compile(r"^selfcheck$"), "id": re.compile(r"^selfcheck-[a-z0-9-]{1,60}$")}


class _Whitelist(HTMLParser):
    def __init__(self, tags: dict | None = None, values: dict | None = None):
        super().__init__(convert_charrefs=True)
        self.problems = []
        self.tags = _TAGS if tags is None else tags
        self.values = values or {}

    def handle_starttag(self, tag, attrs):
        if tag not in self.tags:
            self.problems.append(f"<{tag}>")
            return
        for name, value in attrs:
            if name not in self.tags[tag]:
                self.problems.append(f"<{tag} {name}>")
            elif tag == "div" and name == "id" and not _COURSE_VALUES["id"].match(value or ""):
                self.problems.append(f"<div id={value!r}>")
            elif name in self.values and not self.values[name].match(value or ""):
                self.problems.append(f"<{tag} {name}={value!r}>")
            elif name in ("href", "src") and not safe_url(value or "", image=tag == "img"):
                self.problems.append(f"<{tag} {name}={value!r}>")
            elif name == "style" and not _STYLE.match(value or ""):
                self.problems.append(f"<{tag} style={value!r}>")
            elif name == "type" and value != "checkbox":
                self.problems.append(f"<{tag} type={value!r}>")

    handle_startendtag = handle_starttag

    def handle_comment(self, data):
        self.problems.append("<!-- -->")

    def handle_decl(self, decl):
        self.problems.append(f"<!{decl[:20]}>")

    def handle_pi(self, data):
        self.problems.append(f"<?{data[:20]}>")

    unknown_decl = handle_decl


def _course_html(raw: str) -> bool:
    """Whether a piece of raw HTML in markdown is the self-check form's and nothing else."""
    checker = _Whitelist(_COURSE_TAGS, _COURSE_VALUES)
    checker.feed(raw)
    checker.close()
    return not checker.problems


REMEMBERED_MARKDOWN = 20_000  # markdown cells up to this size without attachments are checked once per worker


def markdown_problems(source: str, attachments: dict | None = None) -> list[str]:
    """What would reach the page as more than Markdown: raw HTML, unsafe link targets, mermaid blocks (found
    in the parse), and any tag or attribute outside what Markdown itself produces (found in the HTML).

    A small cell without attachments is checked once per grading worker (every submission of a chapter
    carries the same instructor's markdown); the cache is bounded in entries and in their size."""
    if not attachments and len(source) <= REMEMBERED_MARKDOWN:
        return list(_remembered_problems(source))
    return _problems(source, attachments)


def _problems(source: str, attachments: dict | None = None) -> list[str]:
    try:
        found = _unsafe_tokens(_markdown_tokens(source))
        checker = _Whitelist()
        checker.feed(render_markdown(source, attachments))
        checker.close()
    except Exception as exc:  # nbconvert fails on a missing attachment, for example
        return [f"rendering failed: {type(exc).__name__}"]
    return found + checker.problems


@functools.lru_cache(maxsize=1024)
def _remembered_problems(source: str) -> tuple[str, ...]:
    return tuple(_problems(source))


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _inline_pattern():
    from nbconvert.filters.markdown_mistune import MathInlineParser as M

    math = "|".join(f"(?:{p})" for p in (M.BLOCK_MATH_TEX, M.BLOCK_MATH_LATEX, M.INLINE_MATH_TEX,
                                         M.INLINE_MATH_LATEX, M.LATEX_ENVIRONMENT))
    return re.compile(
        rf"(?P<keep>{math}"                                      # maths, in nbconvert's own order
        r"|\\[!-/:-@\[-`{-~]"                                   # a backslash escape (\< \$ \`)
        r"|(?<!`)(?P<ticks>`+)(?s:.*?)(?<!`)(?P=ticks)(?!`)"    # a code span
        r"|<(?:https?|mailto):[^\s<>]*>)"                       # an autolink
        r"|(?P<lt><)"
    )


_INLINE = None


def _escape_inline(text: str) -> str:
    global _INLINE
    if _INLINE is None:
        _INLINE = _inline_pattern()
    return _INLINE.sub(lambda m: "&lt;" if m.group("lt") else m.group(0), text)


def escape_html(source: str) -> str:
    """``source`` with every ``<`` written ``&lt;`` except in fenced code, code spans, maths, backslash
    escapes and http(s)/mailto autolinks: raw HTML then shows as text."""
    pieces, text, fence = [], [], None
    for line in source.splitlines(keepends=True):
        match = _FENCE.match(line)
        if fence is not None:
            pieces.append(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = None
        elif match and not (match.group(1)[0] == "`" and "`" in line[match.end():]):
            pieces.append(_escape_inline("".join(text)))
            text, fence = [], match.group(1)
            pieces.append(line)
        else:
            text.append(line)
    pieces.append(_escape_inline("".join(text)))
    return "".join(pieces)


def as_plain_text(source: str) -> str:
    """The whole answer in a code block (shown as text, escaped by the renderer), after a note."""
    longest = max((len(run) for run in re.findall(r"`+", source)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{MARKDOWN_NOTE}\n\n{fence}\n{source}\n{fence}\n"


def inert_markdown(source, attachments: dict | None = None, max_chars: int = MAX_MARKDOWN_CHARS) -> str:
    """A markdown cell's source that renders without raw HTML or unsafe links (unchanged when it already
    does). A cell longer than ``max_chars`` is shown as plain text unparsed: nbconvert's maths rules take
    time quadratic in the length on some input (90,000 characters of ``\\begin{x}``: 7 s to render)."""
    source = _text(source)
    if source is None:
        return MARKDOWN_NOTE
    if len(source) > max_chars:
        return as_plain_text(source)
    if not markdown_problems(source, attachments):
        return source
    escaped = escape_html(source)
    if not markdown_problems(escaped, attachments):
        return escaped
    plain = as_plain_text(source)
    if not markdown_problems(plain):
        return plain
    return MARKDOWN_NOTE  # not reached: a fenced block is always escaped; never risk it


def inert_attachments(attachments, max_image_bytes: int = MAX_IMAGE_BYTES) -> dict:
    """Only raster images (PNG, JPEG, GIF) of valid base64 stay attached."""
    kept = {}
    for name, bundle in (attachments.items() if isinstance(attachments, dict) else ()):
        if not isinstance(name, str) or not isinstance(bundle, dict):
            continue
        images = {}
        for mime, value in bundle.items():
            image = valid_image(value, mime, max_image_bytes, ATTACHMENT_IMAGES)
            if image is not None:
                images[mime] = image
        if images:
            kept[name] = images
    return kept


# ---------------------------------------------------------------------------------------------------------
# The autograde step

class InertOutputs(NbGraderPreprocessor):
    """Keep only inert outputs (text, errors, valid PNG/JPEG), escape raw HTML in markdown cells, keep only
    raster-image attachments, drop the saved widget state."""

    max_image_bytes = Integer(MAX_IMAGE_BYTES, help="largest image (decoded bytes) an output or attachment "
                              "may keep").tag(config=True)
    max_markdown_chars = Integer(MAX_MARKDOWN_CHARS, help="longest markdown cell rendered as Markdown; a "
                                 "longer one is shown as plain text").tag(config=True)

    def preprocess(self, nb, resources):
        if isinstance(nb.get("metadata"), dict):
            nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            cell.outputs, notes = inert_outputs(cell.get("outputs", []), self.max_image_bytes)
            if notes:
                self.log.info("Cell %d: %d outputs other than text and images were removed", index, notes)
        elif cell.cell_type == "markdown":
            if "attachments" in cell:
                attachments = inert_attachments(cell.attachments, self.max_image_bytes)
                if attachments:
                    cell.attachments = NotebookNode(attachments)
                else:
                    del cell["attachments"]
            source = inert_markdown(cell.source, cell.get("attachments"), self.max_markdown_chars)
            if source != cell.source:
                self.log.warning("Cell %d: raw HTML or unsafe links in a markdown cell are shown as text", index)
                cell.source = source
        return cell, resources
