"""The built book in a real browser (Debian's Chromium driven by Playwright), offline: on every page the
maths is typeset, every image loads, saved widgets render their sliders, nothing logs a console error, and no
request leaves the machine. Also dark mode, printing and search. A screenshot of each chapter goes to
_build/screenshots/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import support
from support import SCREENSHOTS, toc_chapters, watched_context

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("book")]


def toc_pages() -> list[str]:
    """Every page of the TOC, and Sphinx's index and search pages."""
    return support.toc_pages() + ["genindex", "search"]


# Waits until MathJax has typeset the page and the widget manager has rendered the saved widgets.
SETTLE = """async () => {
  document.querySelectorAll('img').forEach(img => { img.loading = 'eager'; });
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const saved = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  for (let i = 0; saved && i < 150; i++) {
    if (document.querySelectorAll('.jupyter-widgets.widget-slider, .widget-slider').length) break;
    await new Promise(r => setTimeout(r, 100));
  }
  await Promise.all([...document.images].map(img => img.decode().catch(() => null)));
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


def saved_slider_models(html_file: Path) -> int:
    text = html_file.read_text()
    match = re.search(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', text, re.S)
    if not match:
        return 0
    state = json.loads(match.group(1)).get("state", {})
    return sum("Slider" in m.get("model_name", "") for m in state.values())


@pytest.mark.parametrize("name", toc_pages())
def test_page_renders_offline(built_book, browser, name):
    html, _ = built_book
    file = html / f"{name}.html"
    assert file.is_file(), f"{name}.html was not built"
    with watched_context(browser) as watched:
        page = watched.new_page()
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

        # Widgets: saved sliders render (the explorer in its saved state).
        if saved_slider_models(file):
            rendered = page.locator(".widget-slider").count()
            assert rendered >= 1, f"{name}: the page saves slider widgets but none rendered"

        assert not watched.outside, f"{name}: requests leaving the machine: {watched.outside}"
        assert not watched.failed, f"{name}: local requests that failed: {watched.failed}"
        assert not watched.errors, f"{name}: console errors: {watched.errors}"

        if name in toc_chapters():
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"{Path(name).name}.png"), full_page=True)


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
