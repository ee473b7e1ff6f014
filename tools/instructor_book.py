"""The instructor edition: the same book built from the source notebooks in solutions/ (solutions, hidden
tests and rubrics visible) into a folder of its own.

    .venv/bin/python tools/instructor_book.py [--out _build/instructor] [--chapters 01_why_position ...]

It writes a table of contents and a configuration beside the output (every lessons/<ch>/<ch> entry of
_toc.yml replaced by solutions/<ch>/<ch>) and runs the same strict build as `make book-all`. The HTML lands in
<out>/_build/html. Exercise cells keep their `skip-execution` tag, so the book shows the solutions without
running them, exactly as the student book shows the stubs.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import yaml

from book_build import ROOT, STRICT

LESSON = re.compile(r"^lessons/([^/]+)/\1$")


def instructor_toc(toc: dict, chapters: list[str] | None = None) -> dict:
    """The book's TOC with chapters taken from solutions/; with `chapters`, only those chapters are kept."""

    def convert(entries):
        kept = []
        for entry in entries:
            match = LESSON.match(entry.get("file", ""))
            if match:
                if chapters is not None and match.group(1) not in chapters:
                    continue
                entry = {**entry, "file": f"solutions/{match.group(1)}/{match.group(1)}"}
            kept.append(entry)
        return kept

    toc = dict(toc)
    if "chapters" in toc:
        toc["chapters"] = convert(toc["chapters"])
    if "parts" in toc:
        parts = [{**part, "chapters": convert(part.get("chapters", []))} for part in toc["parts"]]
        toc["parts"] = [part for part in parts if part["chapters"]]
    return toc


def instructor_config(config: dict) -> dict:
    """The book's configuration reading solutions/ instead of lessons/, with absolute extension paths."""
    config = yaml.safe_load(yaml.safe_dump(config))  # a deep copy
    config["title"] = f"{config.get('title', '')} (instructor edition)".strip()
    excluded = [p for p in config.get("exclude_patterns", []) if not p.startswith("solutions")]
    config["exclude_patterns"] = excluded + ["lessons/**"]
    cache = config.get("execute", {}).get("cache")
    if cache:
        config["execute"]["cache"] = str((ROOT / cache).resolve())
    extensions = config.get("sphinx", {}).get("local_extensions", {})
    for name, path in extensions.items():
        extensions[name] = str((ROOT / path).resolve())
    return config


def write_sources(out: Path, chapters: list[str] | None = None) -> tuple[Path, Path]:
    """Write <out>/_toc.yml and <out>/_config.yml; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    toc = instructor_toc(yaml.safe_load((ROOT / "_toc.yml").read_text()), chapters)
    config = instructor_config(yaml.safe_load((ROOT / "_config.yml").read_text()))
    toc_path, config_path = out / "_toc.yml", out / "_config.yml"
    toc_path.write_text(yaml.safe_dump(toc, sort_keys=False))
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return toc_path, config_path


def build(out: Path, chapters: list[str] | None = None, cache: Path | None = None) -> subprocess.CompletedProcess:
    toc_path, config_path = write_sources(out, chapters)
    if cache is not None:
        config = yaml.safe_load(config_path.read_text())
        config["execute"]["cache"] = str(cache)
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    jb = Path(sys.executable).with_name("jupyter-book")
    return subprocess.run([str(jb), "build", str(ROOT), "--toc", str(toc_path), "--config", str(config_path),
                           "--path-output", str(out), "--all", *STRICT],
                          cwd=ROOT, capture_output=True, text=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "instructor")
    parser.add_argument("--chapters", nargs="*", help="only these chapters (default: every chapter of _toc.yml)")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    result = build(out, args.chapters)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode == 0:
        print(f"instructor edition: {out / '_build' / 'html' / 'index.html'}")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
