"""The whole book as one PDF: every page of the built HTML book, in the table of contents' order, printed by the
system's Chromium and joined into one file with a bookmark per page.

    .venv/bin/python tools/book_pdf.py [--html _build/html] [--out _build/pdf/posenc-course.pdf]

`make book-pdf` builds the book, then runs this. Chromium is Debian's (/usr/bin/chromium), driven headless by
Playwright, which downloads no browser of its own; every request that would leave the machine is refused. Each
page is printed once MathJax has typeset it and its images and fonts have loaded, with the print styles of
book/_static/posenc.css and print.css: no navigation, code and outputs wrapped to the page, each explorer as the
default figure it shows. pypdf joins the pages.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from book_build import ROOT, toc_pages

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                 "--disable-dev-shm-usage"]
OUT = ROOT / "_build" / "pdf" / "posenc-course.pdf"
# A4 (mm). The page is laid out at the printable width (CSS pixels, 96 per inch), so what the browser measures
# on the page is what lands on paper.
PAPER = {"width": 210, "height": 297}
MARGIN = {"top": 14, "bottom": 16, "left": 12, "right": 12}
WIDTH = round((PAPER["width"] - MARGIN["left"] - MARGIN["right"]) / 25.4 * 96)

# Waits until MathJax has typeset the page, and every image and font has loaded.
SETTLE = """async () => {
  document.querySelectorAll('img').forEach(img => { img.loading = 'eager'; });
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await Promise.all([...document.images].map(img => img.decode().catch(() => null)));
  await document.fonts.ready;
}"""

# The page's title as its <h1> reads (without the heading's permalink sign), else the document's title.
TITLE = """() => {
  const h1 = document.querySelector('article h1') || document.querySelector('h1');
  const text = h1 ? h1.innerText.replace(/[#\\u00b6]\\s*$/, '').trim() : '';
  return text || document.title.split(' \\u2014 ')[0];
}"""

# What reaches past the right edge of the printed column (and would be cut off on paper): code and outputs (pre),
# figures, tables, paragraphs, display equations. One "what: text" line each.
OVERFLOW = """() => {
  const article = document.querySelector('article.bd-article');
  if (!article) return [];
  const right = Math.min(article.getBoundingClientRect().right, document.documentElement.clientWidth) + 1;
  const seen = [];
  for (const el of article.querySelectorAll('pre, img, table, p, li, mjx-container[display="true"]')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0 || el.closest('details:not([open])')) continue;
    if (box.right > right) {
      seen.push(`${el.tagName.toLowerCase()} ${Math.round(box.right - right)} px too wide: ` +
                (el.innerText || el.getAttribute('alt') || '').trim().split('\\n')[0].slice(0, 80));
    }
  }
  return seen;
}"""

FOOTER = ('<div style="font-size:8px;width:100%;padding:0 12mm;color:#666;'
          'text-align:right"><span class="title"></span></div>')


def is_local(url: str) -> bool:
    """A request that stays on this machine (also what the browser tests allow, tests/support.py)."""
    if url.startswith(("file:", "data:", "blob:", "about:")):
        return True
    return urlsplit(url).hostname in ("localhost", "127.0.0.1", "::1")


@dataclass
class Printed:
    """One page of the book on paper: its name in the TOC, its title, the PDF, and what overflows its column."""

    name: str
    title: str
    pdf: bytes
    overflow: list[str] = field(default_factory=list)


def print_pages(html: Path, pages: list[str], log=print, browser=None) -> list[Printed]:
    """Each page of the built book printed by headless Chromium: ``browser`` (a Playwright browser already
    running, e.g. the tests'), or Debian's Chromium started for the purpose."""
    missing = [p for p in pages if not (html / f"{p}.html").is_file()]
    if missing:
        raise FileNotFoundError(f"not in the built book {html}: {missing} (build it first: make book)")
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                return print_pages(html, pages, log, browser)
            finally:
                browser.close()
    printed = []
    context = browser.new_context(viewport={"width": WIDTH, "height": 1000})
    try:
        context.route("**/*", lambda r: r.continue_() if is_local(r.request.url) else r.abort())
        page = context.new_page()
        for name in pages:
            started = time.monotonic()
            page.goto((html / f"{name}.html").as_uri(), wait_until="load")
            page.evaluate(SETTLE)
            title = page.evaluate(TITLE)
            page.emulate_media(media="print")
            overflow = page.evaluate(OVERFLOW)
            pdf = page.pdf(width=f"{PAPER['width']}mm", height=f"{PAPER['height']}mm", print_background=True,
                           margin={side: f"{mm}mm" for side, mm in MARGIN.items()}, display_header_footer=True,
                           header_template="<span></span>", footer_template=FOOTER)
            page.emulate_media(media="screen")
            printed.append(Printed(name, title, pdf, overflow))
            log(f"printed {name} ({time.monotonic() - started:.1f} s)")
            for line in overflow:
                log(f"  warning: {name}: {line}")
    finally:
        context.close()
    return printed


def empty_fractions(pdf: bytes, scale: float = 0.5) -> list[float]:
    """For each page of ``pdf`` (one printed page of the book), the share of its printable height left empty
    below the last ink: 0 for a full page, 1 for a blank one. The pages are rendered to grey pixels
    (pypdfium2); the margins, where the footer is, are not counted."""
    import numpy as np
    import pypdfium2

    fractions = []
    for page in pypdfium2.PdfDocument(pdf):
        pixels = np.asarray(page.render(scale=scale, grayscale=True).to_pil().convert("L"))
        height = pixels.shape[0]
        body = pixels[round(height * MARGIN["top"] / PAPER["height"]):
                      height - round(height * MARGIN["bottom"] / PAPER["height"])]
        ink = np.flatnonzero((body < 245).any(axis=1))
        fractions.append(1 - (ink[-1] + 1 if len(ink) else 0) / len(body))
    return fractions


def holes(printed: list[Printed], most: float = 1 / 3) -> list[str]:
    """Every page more than ``most`` empty that is not the last of its book page: "name page k: 43 % empty"."""
    found = []
    for p in printed:
        fractions = empty_fractions(p.pdf)
        found += [f"{p.name} page {k + 1} of {len(fractions)}: {f:.0%} empty"
                  for k, f in enumerate(fractions[:-1]) if f > most]
    return found


def join(printed: list[Printed], out: Path, title: str = "") -> int:
    """Write the printed pages as one PDF with a bookmark per page; return its number of pages."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in printed:
        start = len(writer.pages)
        writer.append(PdfReader(io.BytesIO(page.pdf)))
        writer.add_outline_item(title=page.title, page_number=start)
    if title:
        writer.add_metadata({"/Title": title})
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f:
        writer.write(f)
    return len(writer.pages)


def book_title() -> str:
    import yaml

    return str(yaml.safe_load((ROOT / "_config.yml").read_text()).get("title", ""))


def build(html: Path, out: Path = OUT, toc: Path = ROOT / "_toc.yml", log=print, browser=None) -> list[Printed]:
    """Print every page of ``toc`` from the built book ``html`` into ``out``; return the printed pages."""
    printed = print_pages(html, toc_pages(toc), log, browser)
    join(printed, out, book_title())
    return printed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html", help="the built book")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--toc", type=Path, default=ROOT / "_toc.yml")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: install Debian's chromium (make system-deps)", file=sys.stderr)
        return 1
    started = time.monotonic()
    printed = build(args.html.resolve(), args.out.resolve(), args.toc)
    from pypdf import PdfReader

    count = len(PdfReader(args.out).pages)
    print(f"book PDF: {args.out} ({count} pages, {time.monotonic() - started:.0f} s)")
    for line in holes(printed):
        print(f"  warning: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
