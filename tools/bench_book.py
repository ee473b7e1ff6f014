"""Book build timings, in one run (`make bench`):

1. the clean strict build: empty execution cache, empty output folder, `--all -W -n --keep-going`;
2. the no-change rebuild right after it (the execution cache answers every notebook);
3. each chapter's execution time (myst-nb's "Executed notebook in N seconds" lines of the clean build);
4. an empty book's build time (the landing page alone), the fixed cost of Sphinx and the theme.

Targets (issue 8): rebuild < 10 s; clean build <= 1.3 x (sum of chapter executions + empty book build).
Everything runs in a temporary folder with its own cache: the repository's _build and .jupyter_cache are
not touched.

    .venv/bin/python tools/bench_book.py [--toc _toc.yml] [--json bench_book.json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from book_build import ROOT, STRICT

EXECUTED = re.compile(r"(\S+\.ipynb): Executed notebook in ([0-9.]+) seconds")


def private_config(work: Path) -> Path:
    """_config.yml with the execution cache in `work` and absolute extension paths."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config.setdefault("execute", {})["cache"] = str(work / "cache")
    extensions = config.get("sphinx", {}).get("local_extensions", {})
    for name, path in extensions.items():
        extensions[name] = str((ROOT / path).resolve())
    path = work / "_config.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def build(toc: Path, config: Path, out: Path, *flags: str) -> tuple[float, str, int]:
    jb = Path(sys.executable).with_name("jupyter-book")
    start = time.perf_counter()
    done = subprocess.run([str(jb), "build", str(ROOT), "--toc", str(toc), "--config", str(config),
                           "--path-output", str(out), *flags], cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout + done.stderr, done.returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Time the book's clean build, no-change rebuild and chapters.")
    parser.add_argument("--toc", type=Path, default=ROOT / "_toc.yml")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)
    toc = args.toc.resolve()

    with tempfile.TemporaryDirectory(prefix="bench_book_") as tmp:
        work = Path(tmp)
        config = private_config(work)

        clean, log, code = build(toc, config, work / "book", "--all", *STRICT)
        if code != 0:
            sys.stderr.write(log[-5000:])
            print(f"the clean strict build failed (exit {code})")
            return 1
        chapters = {Path(path).stem: float(seconds) for path, seconds in EXECUTED.findall(log)}
        rebuild, log2, code2 = build(toc, config, work / "book", *STRICT)
        if code2 != 0:
            sys.stderr.write(log2[-5000:])
            print(f"the no-change rebuild failed (exit {code2})")
            return 1
        reexecuted = EXECUTED.findall(log2)

        empty_toc = work / "_toc_empty.yml"
        empty_toc.write_text(yaml.safe_dump({"format": "jb-book", "root": yaml.safe_load(toc.read_text())["root"]}))
        empty, _, _ = build(empty_toc, config, work / "empty", "--all", "--keep-going")  # links to absent pages warn

    executed = sum(chapters.values())
    budget = 1.3 * (executed + empty)
    results = {"clean_build_s": round(clean, 1), "rebuild_s": round(rebuild, 1), "empty_book_s": round(empty, 1),
               "chapters_s": {k: round(v, 1) for k, v in chapters.items()}, "chapters_sum_s": round(executed, 1),
               "clean_budget_s": round(budget, 1), "rebuild_reexecuted": len(reexecuted)}
    print(f"clean strict build     {clean:7.1f} s   (target <= 1.3 x ({executed:.1f} + {empty:.1f}) = {budget:.1f} s: "
          f"{'met' if clean <= budget else 'MISSED'})")
    print(f"no-change rebuild      {rebuild:7.1f} s   (target < 10 s: {'met' if rebuild < 10 else 'MISSED'}; "
          f"notebooks re-executed: {len(reexecuted)})")
    print(f"empty book build       {empty:7.1f} s")
    print("chapter execution (clean build):")
    for name, seconds in chapters.items():
        print(f"  {name:28s} {seconds:6.1f} s")
    print(f"  {'sum':28s} {executed:6.1f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
