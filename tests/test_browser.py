"""The built book in a real browser (Debian's Chromium driven by Playwright), offline: on every page the
maths is typeset, every image loads, nothing logs a console error, no request leaves the machine, and the first
load (every request) stays within 4 MB; at a phone's width nothing overflows. Also dark mode, printing and
search. A screenshot of each chapter goes to _build/screenshots/."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import support
from support import SCREENSHOTS, toc_chapters, watched_context

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("book")]


def toc_pages() -> list[str]:
    """Every page of the TOC, and Sphinx's index and search pages."""
    return support.toc_pages() + ["genindex", "search"]


# Waits until MathJax has typeset the page, and every image (lazy ones too) and font has loaded.
SETTLE = """async () => {
  document.querySelectorAll('img').forEach(img => { img.loading = 'eager'; });
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await Promise.all([...document.images].map(img => img.decode().catch(() => null)));
  await document.fonts.ready;
  await new Promise(r => setTimeout(r, 300));
}"""

# The article's text outside code and outputs, where raw TeX would mean MathJax did not run.
PROSE = """() => {
  const article = document.querySelector('article.bd-article');
  if (!article) return '';
  const copy = article.cloneNode(true);
  copy.querySelectorAll('pre, code, .highlight, .cell_input, .cell_output, mjx-container, script, style')
      .forEach(n => n.remove());
  return copy.innerText;
}"""

RAW_TEX = re.compile(r"\$\$|\\begin\{|\\\(|\\\[|\\(frac|sum|theta|mathbf|mathrm|left|right|cdot|sqrt)\b")


FIRST_LOAD_BUDGET = 4_000_000  # bytes a page's first load may take, every request counted (issue 18)


def first_load(requested: list[str], html: Path) -> tuple[int, list[str]]:
    """The bytes of the files behind the requested URLs (the book is read from file://; data: URIs are part of the
    page's own bytes), and the largest five, for the message."""
    sizes = {}
    for url in requested:
        if url.startswith("file:"):
            path = Path(unquote(urlsplit(url).path))
            sizes[url] = path.stat().st_size if path.is_file() else 0
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    names = [f"{os.path.relpath(unquote(urlsplit(u).path), html)} {s / 1e3:.0f} kB" for u, s in largest]
    return sum(sizes.values()), names


@pytest.mark.parametrize("name", toc_pages())
def test_page_renders_offline(built_book, browser, name):
    html, _ = built_book
    file = html / f"{name}.html"
    assert file.is_file(), f"{name}.html was not built"
    with watched_context(browser) as watched:
        page = watched.new_page()
        requested = []
        page.on("request", lambda r: requested.append(r.url))
        page.goto(file.as_uri(), wait_until="load")
        page.evaluate(SETTLE)

        # Maths: every math node typeset, no raw TeX in the prose.
        math = page.locator("article .math").count()
        untypeset = page.evaluate("() => [...document.querySelectorAll('article .math')]"
                                  ".filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 60))")
        assert not untypeset, f"{name}: {len(untypeset)} of {math} formulas not typeset, e.g. {untypeset[:3]}"
        raw = RAW_TEX.findall(page.evaluate(PROSE))
        assert not raw, f"{name}: raw TeX left in the text: {raw[:5]}"

        # Images: every one loaded.
        broken = page.evaluate("() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))"
                               ".map(i => i.src.slice(0, 120))")
        assert not broken, f"{name}: images that did not load: {broken}"

        # Weight: the first load, images below the fold included (SETTLE loads them all).
        weight, largest = first_load(requested, html)
        assert weight <= FIRST_LOAD_BUDGET, \
            f"{name}: the first load takes {weight / 1e6:.2f} MB, more than {FIRST_LOAD_BUDGET / 1e6:.0f}: {largest}"

        assert not watched.outside, f"{name}: requests leaving the machine: {watched.outside}"
        assert not watched.failed, f"{name}: local requests that failed: {watched.failed}"
        assert not watched.errors, f"{name}: console errors: {watched.errors}"

        if name in toc_chapters():
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"{Path(name).name}.png"), full_page=True)


# At a phone's width: what is wider than the screen, display equations cut off or covered by their number,
# controls off the screen, and explorer pictures shrunk below 60 % of their drawn size (labels under ~8 px).
PHONE = """() => {
  const W = document.documentElement.clientWidth, problems = [];
  if (document.documentElement.scrollWidth > W + 1) {
    const wide = [...document.querySelectorAll('article *')].filter(e => {
      for (let a = e.parentElement; a; a = a.parentElement)
        if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return false;
      return e.getBoundingClientRect().right > W + 1; });
    problems.push(`the page is ${document.documentElement.scrollWidth}px wide: ` +
                  wide.slice(0, 3).map(e => e.tagName + ' ' + e.textContent.slice(0, 50)).join(' | '));
  }
  for (const m of document.querySelectorAll('article div.math')) {
    const c = m.querySelector('mjx-container'), n = m.querySelector('.eqno');
    if (!c) continue;
    const cr = c.getBoundingClientRect(), what = m.id || c.textContent.slice(0, 40);
    if (cr.right > W + 1) problems.push(`equation ${what} runs off the screen`);
    if (c.scrollWidth > c.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(c).overflowX))
      problems.push(`equation ${what} is cut off and does not scroll`);
    if (c.scrollWidth > c.clientWidth + 1 && !c.classList.contains('posenc-scrolls'))
      problems.push(`equation ${what} scrolls with no mark saying so (book/_static/equations.js)`);
    if (n) {  // a number beside an equation that does not fit cuts it off (or covers it)
      const nr = n.getBoundingClientRect(), sameLine = nr.top < cr.bottom - 1 && nr.bottom > cr.top + 1;
      const covers = nr.left < cr.right - 1 && nr.right > cr.left + 1;
      if (sameLine && (covers || c.scrollWidth > c.clientWidth + 1))
        problems.push(`equation ${what} is cut off beside its number ${n.firstChild.textContent.trim()}`);
    }
  }
  for (const e of document.querySelectorAll('article input, article select, article button')) {
    const r = e.getBoundingClientRect();
    if (r.width && (r.right > W + 1 || r.left < -1)) problems.push(`a control (${e.tagName}) off the screen`);
  }
  for (const img of document.querySelectorAll('article .cell_output img, article figure img')) {
    if (img.closest('.posenc-explorer') || !img.naturalWidth || img.clientWidth >= 0.6 * img.naturalWidth) continue;
    const a = img.closest('a');
    if (!a || !a.href.endsWith(img.getAttribute('src').split('/').pop()))
      problems.push(`a figure at ${Math.round(100 * img.clientWidth / img.naturalWidth)}% of its size, not a link to ` +
                    `itself at full size: ${img.getAttribute('alt') || img.getAttribute('src')}`);
  }
  for (const img of document.querySelectorAll('article img.posenc-explorer-frame'))
    if (img.naturalWidth && img.clientWidth < 0.6 * img.naturalWidth)
      problems.push(`an explorer picture at ${Math.round(100 * img.clientWidth / img.naturalWidth)}% of its size`);
  return problems;
}"""


@pytest.mark.parametrize("name", support.toc_pages())
def test_phone_layout(built_book, browser, name):
    """At 390 px (a phone): nothing wider than the screen, no display equation cut off or beside its number
    (it shrinks to fit, or scrolls with a mark saying so, the number goes below), no control off the screen,
    explorer pictures large enough to read, and every figure too small to read a link to itself at full size."""
    html, _ = built_book
    with watched_context(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True) as watched:
        page = watched.new_page()
        page.goto((html / f"{name}.html").as_uri(), wait_until="load")
        page.evaluate(SETTLE)
        if page.evaluate("() => document.querySelector('div.math mjx-container') !== null"):
            page.wait_for_function("() => document.documentElement.dataset.equationsFitted === 'true'",
                                   timeout=30_000)
        page.wait_for_function("() => document.documentElement.dataset.figuresChecked === 'true'", timeout=30_000)
        problems = page.evaluate(PHONE)
        assert not problems, f"{name} at 390 px:\n" + "\n".join(problems[:20])
        if name in toc_chapters():
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"phone_{Path(name).name}.png"))


def test_dark_mode_keeps_figures_readable(built_book, browser):
    html, _ = built_book
    chapter = toc_chapters()[1] if len(toc_chapters()) > 1 else toc_chapters()[0]
    with watched_context(browser, color_scheme="dark") as watched:
        page = watched.new_page()
        page.add_init_script("localStorage.setItem('theme', 'dark'); localStorage.setItem('mode', 'dark');")
        page.goto((html / f"{chapter}.html").as_uri())
        page.evaluate(SETTLE)
        assert page.evaluate("() => document.documentElement.dataset.theme") == "dark", "dark mode did not apply"
        styles = page.evaluate("""() => [...document.querySelectorAll('article .cell_output img')].map(i => {
            const s = getComputedStyle(i); return [s.filter, s.backgroundColor]; })""")
        assert styles, f"{chapter}: no figure to check"
        dimmed = [s for s in styles if s[0] != "none" or s[1] != "rgb(255, 255, 255)"]
        assert not dimmed, f"{chapter}: figures dimmed or on a dark background in dark mode: {dimmed[:3]}"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("article .cell_output img").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / f"dark_{Path(chapter).name}.png"))
        assert not watched.errors, watched.errors


def test_print_shows_the_article_only(built_book, browser):
    html, _ = built_book
    chapter = toc_chapters()[0]
    with watched_context(browser) as watched:
        page = watched.new_page()
        page.goto((html / f"{chapter}.html").as_uri())
        page.evaluate(SETTLE)
        page.emulate_media(media="print")
        shown = page.evaluate("""() => Object.fromEntries(['.bd-header', '.bd-sidebar-primary', '.bd-sidebar-secondary',
            '.header-article-items', '.prev-next-area', 'article.bd-article'].map(sel => {
            const el = document.querySelector(sel);
            return [sel, !!el && getComputedStyle(el).display !== 'none' && el.getClientRects().length > 0]; }))""")
        assert shown.pop("article.bd-article"), "the article is hidden in print"
        assert not any(shown.values()), f"navigation printed: {[k for k, v in shown.items() if v]}"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        pdf = SCREENSHOTS / f"{Path(chapter).name}.pdf"
        page.pdf(path=str(pdf), format="A4", print_background=True)
        data = pdf.read_bytes()
        assert data.startswith(b"%PDF") and data.count(b"/Type /Page") >= 2, "the printed chapter is not a PDF"
        assert not watched.outside, watched.outside


@pytest.fixture(scope="module")
def served_book(built_book):
    """The built book over http://127.0.0.1 (Sphinx's search fetches pages for its summaries, which a browser
    refuses for file:// pages), in a thread of this process."""
    import functools
    import http.server
    import threading

    html, _ = built_book
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(html))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_search_finds_a_chapter(served_book, browser):
    with watched_context(browser) as watched:
        page = watched.new_page()
        page.goto(f"{served_book}/search.html?q=rotary")
        page.wait_for_selector("#search-results li, .search li", timeout=30_000)
        hits = page.locator("#search-results li a, .search li a").evaluate_all("as => as.map(a => a.href)")
        assert any("06_rope" in h for h in hits), f"searching 'rotary' did not find the RoPE chapter: {hits[:10]}"
        assert not watched.outside and not watched.errors, (watched.outside, watched.errors)


def test_search_ranks_the_chapter_first_and_shows_clean_snippets(served_book, browser):
    """A chapter named after the word comes before the glossary's definition of it, and snippets carry
    neither TeX source nor the page's buttons."""
    with watched_context(browser) as watched:
        page = watched.new_page()
        page.goto(f"{served_book}/search.html?q=ALiBi")
        page.wait_for_selector("#search-results li", timeout=30_000)
        page.wait_for_function("document.querySelector('#search-results li p.context') !== null", timeout=30_000)
        hits = page.locator("#search-results li > a").evaluate_all("as => as.map(a => a.href)")
        assert "05_alibi" in hits[0], f"searching 'ALiBi' lists {hits[:3]} first, not the ALiBi chapter"
        assert any("glossary" in h for h in hits[:5]), hits[:5]
        page.wait_for_timeout(2000)  # snippets arrive one page at a time
        snippets = page.locator("#search-results li p.context").all_inner_texts()
        assert snippets, "no snippet"
        for text in snippets:
            assert "\\(" not in text and "\\frac" not in text, f"a snippet shows TeX: {text[:200]}"
            assert "Show code" not in text and "Copy to clipboard" not in text, f"a snippet shows buttons: {text[:200]}"
            assert not re.search(r"ipynb|\bnb\b|\bContents\b", text), \
                f"a snippet shows the download menu or the contents sidebar: {text[:200]}"
        pages = [h.split("#")[0] for h in page.locator("#search-results li > a").evaluate_all("as => as.map(a => a.href)")]
        assert len(pages) == len(set(pages)), f"a page is listed twice: {pages}"
        assert not watched.outside and not watched.errors, (watched.outside, watched.errors)
