"""``InertOutputs``: nothing in the autograded notebook that a browser would run (why: autograder/README.md)."""

import base64
import functools
import re
from html.parser import HTMLParser

from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath, MathInlineParser
from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor

NOTE = "[{what} removed by the grader: students' HTML and scripts are not shown]"
CUT = "\n... Output truncated (more than {} characters) ..."
MARKDOWN_NOTE = ("*The grader shows this cell as plain text: it held something that could run in the grader's "
                 "browser (HTML, a script link) or that does not render (a missing attachment).*")

OUTPUT_IMAGES = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",)}
ATTACHMENT_IMAGES = {**OUTPUT_IMAGES, "image/gif": (b"GIF87a", b"GIF89a")}
MAX_IMAGE_BYTES = 5_000_000
MAX_TEXT_CHARS = 20_000  # nbgrader's LimitOutput counts lines, and print("x" * 10**8) is one line
MAX_MARKDOWN_CHARS = 100_000  # a longer markdown cell is shown as plain text without being parsed
REMEMBERED_MARKDOWN = 20_000  # markdown cells up to this size without attachments are checked once per worker


def _text(value, max_chars: float = float("inf")) -> str | None:
    """A string or nbformat's list of strings as one string, cut to ``max_chars`` with a note; else None."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = "".join(value)
    if not isinstance(value, str):
        return None
    return value if len(value) <= max_chars else value[:max_chars] + CUT.format(max_chars)


def valid_image(value, mime: str, max_bytes: int = MAX_IMAGE_BYTES, kinds=OUTPUT_IMAGES) -> str | None:
    """``value`` without blanks if it is the base64 of an image of a type in ``kinds`` of ``max_bytes`` at most."""
    text = re.sub(r"\s+", "", _text(value) or "")
    if mime not in kinds or len(text) > (max_bytes + 2) // 3 * 4:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except ValueError:
        return None
    return text if len(data) <= max_bytes and data.startswith(kinds[mime]) else None


def _label(mime) -> str:
    """A student's MIME type (or output kind) as a note names it: harmless characters only, short."""
    return re.sub(r"[^A-Za-z0-9.+/_-]", "?", str(mime))[:60] or "?"


def _note(what: str, count: int = 1) -> str:
    return NOTE.format(what=what) + (f" (x{count})" if count > 1 else "")


def _inert_output(output, max_image_bytes: int, max_chars: int) -> tuple[NotebookNode | None, str | None]:
    """One output made inert, and what it lost (None: nothing; "": the output is an execute_result whose text
    is the note, since nbgrader reads a test cell's result)."""
    kind = output.get("output_type") if isinstance(output, dict) else None
    if kind == "stream":
        text, name = _text(output.get("text"), max_chars), output.get("name")
        if text is None:
            return None, "a stream output that is not text"
        return new_output("stream", name=name if name in ("stdout", "stderr") else "stdout", text=text), None
    if kind == "error":
        traceback = output["traceback"] if isinstance(output.get("traceback"), list) else []
        return new_output("error", **{key: _text(str(output.get(key, "")), max_chars) for key in ("ename", "evalue")},
                          traceback=[_text(str(line), max_chars) for line in traceback]), None
    if kind not in ("display_data", "execute_result"):
        return None, f"an output of unknown kind {_label(kind)!r}"
    kept, removed = {}, []
    for mime, value in (output["data"].items() if isinstance(output.get("data"), dict) else ()):
        value = _text(value, max_chars) if mime == "text/plain" else valid_image(value, mime, max_image_bytes)
        if value is not None:
            kept[mime] = value
        else:
            removed.append(("invalid " if mime == "text/plain" or mime in OUTPUT_IMAGES else "") + _label(mime))
    if len(removed) > 4:
        removed[4:] = [f"{len(removed) - 4} more"]
    what = ", ".join(removed) + " output" if removed else None
    if kind == "display_data":
        return (new_output("display_data", data=kept) if kept else None), what
    count = output.get("execution_count") if type(output.get("execution_count")) is int else None
    if what and not kept:
        return new_output("execute_result", data={"text/plain": _note(what)}, execution_count=count), ""
    return new_output("execute_result", data=kept, execution_count=count), what


def inert_outputs(outputs, max_image_bytes: int = MAX_IMAGE_BYTES, max_chars: int = MAX_TEXT_CHARS) -> tuple:
    """A code cell's outputs made inert, and how many lost something: text (cut), errors and valid PNG/JPEG stay,
    without metadata; a text/plain note stands for what was removed, a run of the same note counted in one."""
    result, notes, run = [], 0, None  # run: [what, count] of the note that ends ``result``
    for output in outputs if isinstance(outputs, list) else []:
        new, what = _inert_output(output, max_image_bytes, max_chars)
        notes += what is not None
        if new is not None:
            result.append(new)
            run = None
        if what and run and run[0] == what:
            run[1] += 1
            result[-1] = new_output("display_data", data={"text/plain": _note(*run)})
        elif what:
            run = [what, 1]
            result.append(new_output("display_data", data={"text/plain": _note(what)}))
    return result, notes


_SAFE_LINK = r"https?:|mailto:|[^:/?#]*(?:[/?#]|\Z)"  # (re.match: each alternative from the start)
_SAFE_IMAGE = rf"{_SAFE_LINK}|attachment:|data:image/(?:png|jpeg|gif|webp);base64,[a-z0-9+/=]*\Z"


def safe_url(url, image: bool = False) -> bool:
    """A link target that runs nothing: no scheme, http(s) or mailto; for images also a raster image's base64 data
    and attachments. Control characters and blanks are dropped first, as browsers do (``java\\tscript:``)."""
    cleaned = re.sub(r"[\x00-\x20\x7f]", "", url).lower() if isinstance(url, str) else ":"
    return re.match(_SAFE_IMAGE if image else _SAFE_LINK, cleaned) is not None


_SELFCHECK_ID = r"selfcheck-[a-z0-9-]{1,60}"
_ALIGN = r"text-align:\s*(left|right|center)"
# What nbconvert's renderer writes: tag -> {attribute: regex its whole value matches, None for any} (and safe_url).
_MARKDOWN_TAGS = {
    **{tag: {} for tag in ("p", "em", "strong", "del", "blockquote", "ul", "hr", "br", "table", "thead", "tbody",
                           "tr", "dl", "dt", "dd", "details", "summary")},
    **{f"h{i}": {"id": None} for i in range(1, 7)},
    "a": dict.fromkeys(("href", "title", "class")), "img": dict.fromkeys(("src", "alt", "title")),
    "code": {"class": None}, "pre": {"class": None}, "span": {"class": None}, "li": {"class": None},
    "div": {"class": "highlight|selfcheck", "id": _SELFCHECK_ID}, "ol": {"start": None}, "th": {"style": _ALIGN},
    "td": {"style": _ALIGN}, "input": {"class": None, "type": "checkbox", "disabled": None, "checked": None},
}
# The one raw HTML the chapters write: a self-check question, div.selfcheck of details (tests/selfcheck.py).
_COURSE_TAGS = {"div": {"class": "selfcheck", "id": _SELFCHECK_ID}, "details": {}, "summary": {}}


class _Allowed(HTMLParser):
    """``problems``: the tags, attributes and values of ``html`` outside ``tags``, and any comment or declaration."""

    def __init__(self, html: str, tags: dict):
        super().__init__()
        self.tags, self.problems = tags, []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        allowed = self.tags.get(tag)
        if allowed is None:
            self.problems.append(f"<{tag}>")
            return
        for name, value in attrs:
            value = value or ""
            if name not in allowed or (allowed[name] and not re.fullmatch(allowed[name], value)) \
                    or (name in ("href", "src") and not safe_url(value, image=tag == "img")):
                self.problems.append(f"<{tag} {name}={value[:40]!r}>")

    def handle_comment(self, data):
        self.problems.append(f"markup {data[:20]!r}")

    handle_decl = handle_pi = unknown_decl = handle_comment


def _raw_html(tokens) -> list[str]:
    found = []
    for token in tokens:
        raw = token.get("raw", "")
        if token.get("type") in ("inline_html", "block_html") and _Allowed(raw, _COURSE_TAGS).problems:
            found.append(f"raw HTML {raw[:40]!r}")
        found += _raw_html(token.get("children") or [])
    return found


def markdown_problems(source: str, attachments: dict | None = None) -> tuple[str, ...]:
    """What would reach the page as more than Markdown: raw HTML but the self-check form (found in the parse), any
    tag, attribute, value or link target outside what Markdown writes (in the HTML). Small cells are remembered."""
    if attachments or len(source) > REMEMBERED_MARKDOWN:
        return _problems.__wrapped__(source, attachments)
    return _problems(source)


@functools.lru_cache(maxsize=1024)
def _problems(source: str, attachments: dict | None = None) -> tuple[str, ...]:
    try:
        renderer = IPythonRenderer(escape=False, attachments=attachments or {})  # as formgrader and feedback
        page, state = MarkdownWithMath(renderer=renderer).parse(source)
        return (*_raw_html(state.tokens), *_Allowed(page, _MARKDOWN_TAGS).problems)
    except Exception as exc:  # nbconvert fails on a missing attachment, for example
        return (f"rendering failed: {type(exc).__name__}",)


_MATH = "|".join(f"(?:{getattr(MathInlineParser, name)})" for name in (
    "BLOCK_MATH_TEX", "BLOCK_MATH_LATEX", "INLINE_MATH_TEX", "INLINE_MATH_LATEX", "LATEX_ENVIRONMENT"))
_ESCAPE = re.compile(
    r"(?P<keep>(?m:^ {0,3}(?P<fence>`{3,}(?!.*`)|~{3,})(?s:.*?)(?:^ {0,3}(?P=fence)|\Z))"  # fenced code
    rf"|{_MATH}"                                            # maths, in nbconvert's own order
    r"|\\[!-/:-@\[-`{-~]"                                   # a backslash escape (\< \$ \`)
    r"|(?<!`)(?P<ticks>`+)(?s:.*?)(?<!`)(?P=ticks)(?!`)"    # a code span
    r"|<(?:https?|mailto):[^\s<>]*>)"                       # an autolink
    r"|<"
)


def as_plain_text(source: str) -> str:
    """The whole answer in a code block (shown as text, escaped by the renderer), after a note."""
    fence = "`" * max(3, 1 + max(map(len, re.findall(r"`+", source)), default=0))
    return f"{MARKDOWN_NOTE}\n\n{fence}\n{source}\n{fence}\n"


def inert_markdown(source, attachments: dict | None = None, max_chars: int = MAX_MARKDOWN_CHARS) -> str:
    """A markdown cell's source that renders without raw HTML or unsafe links: as it is if it does, else with each
    ``<`` outside fenced code, code spans, maths, backslash escapes and autolinks written ``&lt;``, else as plain
    text, as is a cell past ``max_chars``, unparsed (nbconvert's maths rules are quadratic on some input)."""
    source = _text(source)
    if source is None:
        return MARKDOWN_NOTE
    if len(source) > max_chars:
        return as_plain_text(source)
    for candidate in (source, _ESCAPE.sub(lambda m: m["keep"] or "&lt;", source)):
        if not markdown_problems(candidate, attachments):
            return candidate
    plain = as_plain_text(source)
    return MARKDOWN_NOTE if markdown_problems(plain) else plain  # (a fenced block is always escaped)


def inert_attachments(attachments, max_image_bytes: int = MAX_IMAGE_BYTES) -> dict:
    """Only raster images (PNG, JPEG, GIF) of valid base64 stay attached."""
    kept = {}
    for name, bundle in (attachments.items() if isinstance(attachments, dict) else ()):
        images = {mime: valid_image(value, mime, max_image_bytes, ATTACHMENT_IMAGES)
                  for mime, value in (bundle.items() if isinstance(bundle, dict) else ())}
        if isinstance(name, str) and any(images.values()):
            kept[name] = {mime: image for mime, image in images.items() if image}
    return kept


class InertOutputs(NbGraderPreprocessor):
    """Every code cell's outputs, markdown cell and attachments made inert; the saved widget state dropped."""

    def preprocess(self, nb, resources):
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            cell.outputs, notes = inert_outputs(cell.get("outputs", []))
            if notes:
                self.log.info("Cell %d: %d outputs other than text and images were removed", index, notes)
        elif cell.cell_type == "markdown":
            if attachments := inert_attachments(cell.pop("attachments", None)):
                cell.attachments = NotebookNode(attachments)
            source = inert_markdown(cell.source, cell.get("attachments"))
            if source != cell.source:
                self.log.warning("Cell %d: raw HTML or unsafe links in a markdown cell are shown as text", index)
                cell.source = source
        return cell, resources
