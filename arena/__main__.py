"""``python -m arena`` runs the experiment and writes book/data/arena.json; ``--check`` reruns it and compares
every number with the committed file instead (exit status 1 on a mismatch, 2 if the file is from another
configuration); ``--smoke`` runs the same code at tiny size (the test suite's run).

Each model's numbers are cached as soon as it finishes (in _build/arena, or _build/arena-check for --check),
so an interrupted run started again trains only what it had not finished; the results file is written only
when every model is done (exit status 3 while models remain, e.g. after ``--limit``)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from . import BUILD, RESULTS
from .check import TOLERANCE, compare, report
from .stats import MARGIN, Z
from .config import SMOKE, Config
from .run import cache_folder, run, to_json


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="a few steps at tiny sizes (the test suite's run)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where to write the results (default {RESULTS.name} in book/data; with --check, nowhere)")
    parser.add_argument("--check", action="store_true",
                        help="re-run and compare every number with the results file instead of writing it")
    parser.add_argument("--against", type=Path, default=RESULTS, help="the results file --check compares with")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2, one per core)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="where each model's numbers are kept (default the checkout's _build/arena, with "
                             "--check _build/arena-check)")
    parser.add_argument("--fresh", action="store_true", help="discard this configuration's cached models first")
    parser.add_argument("--limit", type=int, default=None,
                        help="train at most this many models, then stop (a later run resumes)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if args.limit is not None and args.limit < 0:
        parser.error(f"--limit must be at least 0, got {args.limit}")
    config = Config(**SMOKE) if args.smoke else Config()
    if args.check:
        if not args.against.is_file():
            print(f"{args.against} does not exist: run the experiment (make arena) first", file=sys.stderr)
            return 2
        committed = json.loads(args.against.read_text())
        if committed.get("config_key") != config.key():
            print(f"{args.against} was produced by configuration {committed.get('config_key')}, the code's is "
                  f"{config.key()}: run the experiment (make arena) before checking it", file=sys.stderr)
            return 2
    cache = args.cache or BUILD / ("arena-check" if args.check else "arena")
    if args.fresh:
        shutil.rmtree(cache_folder(config, cache), ignore_errors=True)
    result = run(config, workers=args.workers, show_progress=not args.smoke, cache=cache, limit=args.limit,
                 log=lambda line: print(line, file=sys.stderr))
    if result is None:
        return 3
    result["check"] = {"tolerance": TOLERANCE,
                       "rule": "python -m arena --check: |rerun - committed| <= tolerance for each kind of number, "
                               "every other number (parameters, scales, positions, configuration, corpus) equal"}
    # the paired rule's settings travel with the numbers, so a chapter's hidden test reads them from the file
    result["verdict_rule"] = {"margin": MARGIN, "z": Z,
                              "rule": "a - b is 'lower' when in every seed its mean over windows is below "
                                      "-max(z * SE, margin), 'higher' when above +max(z * SE, margin), "
                                      "'unresolved' otherwise (arena.stats, posenc.verdicts.paired_verdict)"}
    print(f"ran in {result['wall_seconds']:.0f} s wall ({result['machine']['models_from_cache']} models from the "
          f"cache), {result['cpu_seconds']:.0f} s CPU in the workers over all models "
          f"(load average {result['machine']['load_average_start']} -> {result['machine']['load_average_end']})",
          file=sys.stderr)
    out = args.out or (None if args.check else RESULTS)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(to_json(result) + "\n")
        print(f"wrote {out}", file=sys.stderr)
    if not args.check:
        return 0
    print(f"\nchecking {args.against} (torch {committed['versions']['torch']}, "
          f"{committed['machine']['cpu_capability']}) against this run (torch {result['versions']['torch']}, "
          f"{result['machine']['cpu_capability']}); allowed |rerun - committed| by kind: {TOLERANCE}\n")
    return 1 if report(compare(committed, result)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
