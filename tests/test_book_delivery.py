"""What a reader and an instructor get from the built book, checked in its HTML (the browser checks are in
test_browser.py): internal links resolve, every figure has alt text, launch and download buttons, search,
the reader styles, no solution or hidden test of the source notebooks, and the instructor edition."""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from bs4 import BeautifulSoup

import instructor_book  # tools/instructor_book.py (tests/support.py, imported by conftest, puts tools/ on the path)
from autograder import course
from support import ROOT, toc_chapters

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("book")]

SKIP_DIRS = {"_static", "_offline", "_sources", "_images"}


def pages(html: Path) -> list[Path]:
    return sorted(p for p in html.rglob("*.html") if not SKIP_DIRS & set(p.relative_to(html).parts))


@lru_cache(maxsize=None)
def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(), "html.parser")


def article(page: Path):
    return soup(page).select_one("article.bd-article") or soup(page)


def test_internal_links_resolve(built_book):
    html, _ = built_book
    broken = []
    for page in pages(html):
        for a in soup(page).select("a[href]"):
            href = a["href"]
            parts = urlsplit(href)
            if parts.scheme or href.startswith(("//", "mailto:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(html)}: {href} (no such file)")
                continue
            if parts.fragment and target.suffix == ".html":
                if not soup(target).find(id=unquote(parts.fragment)):
                    broken.append(f"{page.relative_to(html)}: {href} (no element with that id)")
    assert not broken, "broken internal links:\n" + "\n".join(broken[:40])


def test_every_figure_has_alt_text(built_book):
    html, _ = built_book
    missing = []
    for page in pages(html):
        for img in article(page).select("img"):
            alt = (img.get("alt") or "").strip()
            src = img.get("src", "")
            # Sphinx puts the file name as alt when nothing was given: that is no description either.
            if not alt or alt == Path(src).name or alt == src:
                missing.append(f"{page.relative_to(html)}: {src[:80]}")
    assert not missing, "figures without alt text (set the cell metadata mystnb.image.alt):\n" + "\n".join(missing)


LAUNCH_HOSTS = ("mybinder.org", "colab.research.google.com", "/hub/user-redirect/")
# Placeholders and the unrelated repositories that tools fill in when nothing is configured.
PLACEHOLDER = re.compile(r"REPLACE[-_]ME|(?i:example\.(org|com|net)\b|binder-examples|jupyter-stacks-datascience"
                         r"|your[-_](org|user(name)?|repo)\b)")


def test_launch_download_and_search(built_book):
    """Launch buttons exactly when _config.yml names the repository (Binder and Colab for that repository, none
    at all without it); a download button on every chapter either way."""
    html, _ = built_book
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = (config.get("repository", {}).get("url") or "").rstrip("/")
    owner_repo = repo.split("github.com/")[1] if repo else None
    for chapter in toc_chapters():
        page = html / f"{chapter}.html"
        links = [a["href"] for a in soup(page).select("a[href]")]
        notebook = f"{chapter}.ipynb"
        if owner_repo:
            assert any(h.startswith("https://mybinder.org/v2/gh/" + owner_repo) and notebook in h for h in links), \
                f"{chapter}: no Binder launch button for {repo}"
            assert any(h.startswith("https://colab.research.google.com/github/" + owner_repo) and notebook in h
                       for h in links), f"{chapter}: no Colab launch button"
        else:
            launch = [h for h in links if any(host in h for host in LAUNCH_HOSTS)]
            assert not launch, f"{chapter}: launch buttons although _config.yml names no repository: {launch}"
        download = [h for h in links if h.endswith(notebook) and "_sources" in h]
        assert download, f"{chapter}: no notebook download button"
        assert (page.parent / download[0]).resolve().is_file(), f"{chapter}: the download link points nowhere"
    assert (html / "search.html").is_file() and (html / "searchindex.js").is_file(), "no search page or index"
    index = (html / "searchindex.js").read_text()
    assert "rotary" in index.lower(), "the search index does not know the chapters' words"
    css = html / "_static" / "posenc.css"
    assert css.is_file() and "posenc.css" in (html / f"{toc_chapters()[0]}.html").read_text(), \
        "the reader styles (book/_static/posenc.css) are not in the pages"


def test_no_placeholder_or_unrelated_repository(built_book):
    """No page, script or stylesheet of the book links a placeholder (REPLACE-ME, example.org) or a repository
    that is not this course's (sphinx-thebe's default Binder example, for one)."""
    html, _ = built_book
    found = []
    for path in sorted(html.rglob("*")):
        if path.suffix not in (".html", ".js", ".css", ".json", ".txt", ".ipynb", ".md"):
            continue
        if "_offline" in path.parts:  # the vendored npm package (MathJax)
            continue
        for match in PLACEHOLDER.finditer(path.read_text(errors="replace")):
            found.append(f"{path.relative_to(html)}: {match.group(0)}")
    assert not found, "placeholders or unrelated repositories in the built book:\n" + "\n".join(found[:30])


# --- Weight (issue 18): the site at most 25 MB, one copy of every asset, only what pages load ------------

SITE_BUDGET = 25_000_000  # bytes; each page's first load (at most 4 MB) is measured in test_browser.py


def test_site_weight_and_one_copy_of_every_asset(built_book):
    html, _ = built_book
    files = [p for p in html.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    by_folder: dict[str, int] = {}
    for p in files:
        top = p.relative_to(html).parts[0] if len(p.relative_to(html).parts) > 1 else "."
        by_folder[top] = by_folder.get(top, 0) + p.stat().st_size
    largest = ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(by_folder.items(), key=lambda kv: -kv[1])[:6])
    assert total <= SITE_BUDGET, f"the site weighs {total / 1e6:.1f} MB, more than {SITE_BUDGET / 1e6:.0f}: {largest}"

    maps = [str(p.relative_to(html)) for p in files if p.suffix == ".map"]
    assert not maps, f"source maps in the site: {maps[:10]}"
    copies: dict[str, list[str]] = {}
    for p in files:
        if p.stat().st_size >= 4096:
            copies.setdefault(hashlib.sha256(p.read_bytes()).hexdigest(), []).append(str(p.relative_to(html)))
    repeated = [names for names in copies.values() if len(names) > 1]
    assert not repeated, f"{len(repeated)} files shipped more than once, e.g. {repeated[:3]}"

    # MathJax: the one combined component the pages load (and what it loads on demand), no other bundle
    mathjax = html / "_offline" / "mathjax"
    if mathjax.is_dir():  # absent when the book was built without npm (it then uses the CDN)
        bundles = sorted(p.name for p in mathjax.glob("*.js"))
        assert bundles == ["tex-mml-chtml.js"], f"MathJax bundles no page loads: {bundles}"
        pages_loading = {m for page in pages(html) for m in re.findall(r'src="[^"]*_offline/mathjax/([^"]+)"',
                                                                         page.read_text())}
        assert pages_loading == {"tex-mml-chtml.js"}, pages_loading
    assert not (html / "_static" / "scripts" / "fontawesome.js").exists(), \
        "the theme's fontawesome.js is shipped although no page loads it (book/_templates/layout.html)"


def test_no_page_saves_widget_state(built_book):
    """The explorers are posenc.explorer (pictures and the page's own script): no page needs ipywidgets' embed
    manager, which the book no longer ships; a saved widget would render as nothing."""
    html, _ = built_book
    saving = [str(page.relative_to(html)) for page in pages(html)
              if "application/vnd.jupyter.widget-state+json" in page.read_text()
              or "application/vnd.jupyter.widget-view+json" in page.read_text()]
    assert not saving, f"pages that save ipywidgets state (make the control a posenc.explorer): {saving}"


# --- Bibliography (book/_ext/bibliography.py) ---------------------------------------------------------------

ARXIV_ID = re.compile(r"arXiv:\s*(\d{4}\.\d{4,5})")


def sort_key(label: str) -> tuple[str, str]:
    import unicodedata

    names, _, year = label.rpartition(", ")
    plain = "".join(c for c in unicodedata.normalize("NFKD", names) if not unicodedata.combining(c))
    return plain.casefold(), year


def test_bibliography_labels_links_order_and_backrefs(built_book):
    """Each entry's label is what the text's citations of it read ([Press et al., 2022]); entries are sorted by
    it; every arXiv id and DOI is a link; each entry links back to every page that cites it, and each page's
    citations of it are listed there."""
    html, _ = built_book
    bibliography = html / "book" / "bibliography.html"
    entries = {c["id"]: c for c in article(bibliography).select("div.citation")}
    assert len(entries) >= 30, "the bibliography lists fewer works than the book cites"

    # what the citations in the pages read, per entry; and which pages cite it
    cited_as: dict[str, set[str]] = {}
    cited_from: dict[str, set[str]] = {}
    for page in pages(html):
        for a in article(page).select("a[href]"):
            target = (page.parent / unquote(urlsplit(a["href"]).path)).resolve()
            fragment = urlsplit(a["href"]).fragment
            if target == bibliography.resolve() and fragment in entries and "posenc-backrefs" not in \
                    " ".join(a.parent.get("class", [])):
                cited_as.setdefault(fragment, set()).add(" ".join(a.get_text().split()))
                cited_from.setdefault(fragment, set()).add(page.relative_to(html).as_posix())

    labels = []
    problems = []
    for entry_id, entry in entries.items():
        label = entry.select_one(".label").get_text().strip().strip("[]")
        labels.append(label)
        texts = cited_as.get(entry_id, set())
        # a textual citation reads "Press et al. (2022)", a year citation "2022": both are parts of the label
        if texts and label not in texts and not all(t in label for t in texts):
            problems.append(f"[{label}] is cited as {sorted(texts)}")
        text = entry.get_text(" ")
        links = [a["href"] for a in entry.select("a[href]")]
        for arxiv in ARXIV_ID.findall(text):
            if not any(h.startswith("https://arxiv.org/abs/" + arxiv) for h in links):
                problems.append(f"[{label}]: arXiv:{arxiv} is not a link")
        for doi in re.findall(r"doi:\s*(\S+?)[.,]?(?:\s|$)", text):
            if not any(h.startswith("https://doi.org/") and doi in h for h in links):
                problems.append(f"[{label}]: doi:{doi} is not a link")
        back = {(bibliography.parent / unquote(urlsplit(a["href"]).path)).resolve().relative_to(html.resolve())
                .as_posix() for a in entry.select("p.posenc-backrefs a[href]")}
        if cited_from.get(entry_id, set()) - back:
            problems.append(f"[{label}]: no way back to {sorted(cited_from[entry_id] - back)}")
    assert not problems, "\n".join(problems[:30])
    assert len(set(labels)) == len(labels), f"two entries share a label: {sorted(labels)}"
    assert labels == sorted(labels, key=sort_key), f"entries out of order: {labels}"
    assert cited_as, "no citation in the pages links to the bibliography"


# --- No solution code, hidden test or model answer in the student book ---------------------------------

REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)
MIN_CHARS = 12  # shorter lines ("return x", "pass") also occur in honest narrative code


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


POSENC_SOURCE = "\n".join(normalise(line) for f in sorted((ROOT / "posenc").glob("*.py"))
                          for line in f.read_text().splitlines())


def markdown_words(line: str) -> str:
    return normalise(re.sub(r"[*_`#>|]", " ", line))


def secret_lines(source: Path, lesson: Path) -> list[tuple[str, str]]:
    """(what, line) for each line of a solution region, hidden-test region or model answer of the source
    notebook that the lesson notebook does not contain anyway."""
    nb = json.loads(source.read_text())
    lesson_text = normalise(" ".join("".join(c["source"]) for c in json.loads(lesson.read_text())["cells"]))
    lesson_text += " " + lesson_text.replace("`", "")  # prose quotes code in backticks, which the page drops
    # A traceback in the book may quote posenc's own source, which a solution line can repeat.
    lesson_text += " " + POSENC_SOURCE
    found = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code":
            regions = [(kind.lower(), body) for kind, body in REGION.findall(src)]
            if meta.get("solution") and not regions:
                regions = [("solution", src)]
            for kind, body in regions:
                for line in body.splitlines():
                    line = normalise(line)
                    if len(line) >= MIN_CHARS and line not in lesson_text:
                        found.append((kind, line))
        elif meta.get("solution"):  # a written answer: the model answer and rubric
            for line in src.splitlines():
                if "$" in line or "{" in line:  # maths and roles render differently; the other lines suffice
                    continue
                words = markdown_words(line)
                if len(words) >= 25 and words not in lesson_text:
                    found.append(("model answer", words))
    return found


def page_text(page: Path) -> str:
    return normalise(article(page).get_text(""))


def test_student_book_contains_no_solution_or_hidden_test(built_book):
    html, _ = built_book
    leaks, checked = [], 0
    for chapter in toc_chapters():
        name = Path(chapter).name
        text = page_text(html / f"{chapter}.html")
        lines = secret_lines(course.source_notebook(name), course.lesson_notebook(name))
        assert lines, f"{name}: found no solution region in the source notebook (is the pattern still right?)"
        checked += len(lines)
        leaks += [f"{name} ({kind}): {line}" for kind, line in lines if line in text]
    assert not leaks, "the student book shows lines of the solutions:\n" + "\n".join(leaks[:30])
    assert checked > 50


@pytest.mark.xdist_group("instructor")
def test_instructor_edition_shows_solutions(tmp_path):
    """`make book-instructor` in small: the landing page and one chapter from solutions/, built strictly."""
    chapter = Path(toc_chapters()[0]).name
    result = instructor_book.build(tmp_path, [chapter], cache=tmp_path / "cache")
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    html = tmp_path / "_build" / "html"
    page = html / "solutions" / chapter / f"{chapter}.html"
    assert page.is_file(), sorted(str(p.relative_to(html)) for p in html.rglob("*.html"))
    text = page_text(page)
    lines = secret_lines(course.source_notebook(chapter), course.lesson_notebook(chapter))
    shown = [line for _, line in lines if line in text]
    assert len(shown) >= 0.9 * len(lines), f"the instructor edition hides {len(lines) - len(shown)} solution lines"
    assert "Rubric" in text, "the instructor edition shows no rubric"
    assert "(instructor edition)" in soup(page).title.get_text()
