"""The book's build settings in one place: jupyter-book's strict flags, and the pages a table of contents lists.

    python tools/book_build.py --strict-flags     # prints the flags (the Makefile's book targets read them)

`make book`, `make book-all`, tools/instructor_book.py, tools/bench_book.py and the tests' strict build all take
the flags from here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# Warnings are errors, every cross-reference must resolve, and every page is built before the build fails.
STRICT = ("--warningiserror", "--nitpick", "--keep-going")


def toc_pages(toc: Path = ROOT / "_toc.yml") -> list[str]:
    """Every page of a jupyter-book table of contents, in its order: the root, then each part's chapters and
    the chapters outside parts."""
    data = yaml.safe_load(Path(toc).read_text())
    entries = [entry for part in data.get("parts", []) for entry in part.get("chapters", [])]
    entries += data.get("chapters", [])
    return [data["root"]] + [entry["file"] for entry in entries if "file" in entry]


def toc_chapters(toc: Path = ROOT / "_toc.yml") -> list[str]:
    """The course's chapters in a table of contents, as ``lessons/<ch>/<ch>`` page names."""
    return [page for page in toc_pages(toc) if page.startswith("lessons/")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict-flags", action="store_true", help="print jupyter-book's strict flags")
    args = parser.parse_args(argv)
    if args.strict_flags:
        print(" ".join(STRICT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
