"""The instructor edition: the same book built from the source notebooks in solutions/ (solutions, hidden
tests and rubrics visible) into a folder of its own.

    .venv/bin/python tools/instructor_book.py [--out _build/instructor] [--chapters 01_why_position ...]

It writes each chapter's source notebook from its MyST markdown (solutions/<ch>/<ch>.md to .ipynb, as `make
lessons` does), a table of contents and a configuration beside the output (every lessons/<ch>/<ch> entry of
_toc.yml replaced by solutions/<ch>/<ch>) and runs the same strict build as `make book-all`. The HTML lands in
<out>/_build/html. Exercise cells keep their `skip-execution` tag, so the book shows the solutions without
running them, exactly as the student book shows the stubs.

Another edition of the book (tools/selfstudy_book.py) is built the same way: an `Edition` names the folder its
chapters are read from and the words added to the book's title, and `build` does the rest.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from autograder import course
from book_build import ROOT, STRICT

LESSON = re.compile(r"^lessons/([^/]+)/\1$")


@dataclass(frozen=True)
class Edition:
    """A version of the book whose chapters are read from ``folder``/<ch>/<ch> instead of lessons/<ch>/<ch>;
    its title ends with "(``name``)". ``config`` is merged into the book's configuration (dicts key by key);
    ``prepare(chapters)``, if given, writes the chapters' sources into ``folder`` before the build."""

    name: str
    folder: str
    config: dict = field(default_factory=dict)
    prepare: Callable[[list[str] | None], object] | None = None


def source_notebooks(chapters: list[str] | None = None) -> list[Path]:
    """Write each chapter's source notebook, solutions/<ch>/<ch>.ipynb, from its MyST markdown (the book reads the
    notebook, as nbgrader does: the same cells the lessons come from)."""
    return [course.source_notebook(name) for name in course.assignments() if chapters is None or name in chapters]


# The chapters' markdown sources are left out: Sphinx would otherwise find two files for one chapter.
INSTRUCTOR = Edition("instructor edition", "solutions", config={"exclude_patterns": ["solutions/*/*.md"]},
                     prepare=source_notebooks)


def merged(base: dict, extra: dict) -> dict:
    """``base`` updated by ``extra``, dicts merged key by key and lists appended to."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        elif isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = out[key] + [v for v in value if v not in out[key]]
        else:
            out[key] = value
    return out


def edition_toc(toc: dict, edition: Edition = INSTRUCTOR, chapters: list[str] | None = None) -> dict:
    """The book's TOC with chapters taken from the edition's folder; with `chapters`, only those are kept."""

    def convert(entries):
        kept = []
        for entry in entries:
            match = LESSON.match(entry.get("file", ""))
            if match:
                if chapters is not None and match.group(1) not in chapters:
                    continue
                entry = {**entry, "file": f"{edition.folder}/{match.group(1)}/{match.group(1)}"}
            kept.append(entry)
        return kept

    toc = dict(toc)
    if "chapters" in toc:
        toc["chapters"] = convert(toc["chapters"])
    if "parts" in toc:
        parts = [{**part, "chapters": convert(part.get("chapters", []))} for part in toc["parts"]]
        toc["parts"] = [part for part in parts if part["chapters"]]
    return toc


def edition_config(config: dict, edition: Edition = INSTRUCTOR) -> dict:
    """The book's configuration reading the edition's folder instead of lessons/, with absolute extension
    paths."""
    config = merged(yaml.safe_load(yaml.safe_dump(config)), edition.config)  # a deep copy, then the edition's
    config["title"] = f"{config.get('title', '')} ({edition.name})".strip()
    folder = edition.folder.rstrip("/")
    excluded = [p for p in config.get("exclude_patterns", []) if p.split("/")[0] != folder]
    config["exclude_patterns"] = excluded + ["lessons/**"] + edition.config.get("exclude_patterns", [])
    cache = config.get("execute", {}).get("cache")
    if cache:
        config["execute"]["cache"] = str((ROOT / cache).resolve())
    extensions = config.get("sphinx", {}).get("local_extensions", {})
    for name, path in extensions.items():
        extensions[name] = str((ROOT / path).resolve())
    return config


def write_sources(out: Path, chapters: list[str] | None = None,
                  edition: Edition = INSTRUCTOR) -> tuple[Path, Path]:
    """Write <out>/_toc.yml and <out>/_config.yml; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    toc = edition_toc(yaml.safe_load((ROOT / "_toc.yml").read_text()), edition, chapters)
    config = edition_config(yaml.safe_load((ROOT / "_config.yml").read_text()), edition)
    toc_path, config_path = out / "_toc.yml", out / "_config.yml"
    toc_path.write_text(yaml.safe_dump(toc, sort_keys=False))
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return toc_path, config_path


def build(out: Path, chapters: list[str] | None = None, cache: Path | None = None,
          edition: Edition = INSTRUCTOR) -> subprocess.CompletedProcess:
    """The edition built strictly into <out>/_build/html, re-reading every page (`make book-all`'s flags);
    `cache`: another jupyter-cache folder than the book's."""
    if edition.prepare is not None:
        edition.prepare(chapters)
    toc_path, config_path = write_sources(out, chapters, edition)
    if cache is not None:
        config = yaml.safe_load(config_path.read_text())
        config["execute"]["cache"] = str(cache)
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    jb = Path(sys.executable).with_name("jupyter-book")
    return subprocess.run([str(jb), "build", str(ROOT), "--toc", str(toc_path), "--config", str(config_path),
                           "--path-output", str(out), "--all", *STRICT],
                          cwd=ROOT, capture_output=True, text=True)


def main(argv=None, edition: Edition = INSTRUCTOR, out: Path = ROOT / "_build" / "instructor",
         description: str = __doc__) -> int:
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--chapters", nargs="*", help="only these chapters (default: every chapter of _toc.yml)")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    result = build(out, args.chapters, edition=edition)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode == 0:
        print(f"{edition.name}: {out / '_build' / 'html' / 'index.html'}")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
