"""Grading speed: ``.venv/bin/python tools/bench_grading.py`` (``make bench``), a development tool.

1. Per chapter, the seconds nbgrader's autograde takes for one submission: a correct one (every cell of
   the chapter runs) against an empty notebook for the same chapter, graded without restoring any cell
   (kernel start-up and nbgrader's own work: the floor). Target: each chapter at most 1.5 x the floor.
2. The wall time of ``python -m autograder grade`` on a class of generated submissions (100 by default:
   perfect, partial and blank, spread over the chapters) with ``--jobs 1`` and ``--jobs 2``.
3. The sandbox's cost: one chapter's correct submission autograded sandboxed and unsandboxed, alternating,
   in one process (``sandbox_cost``). Target: at most 1.2 x.

Grading in 1 and 2 is sandboxed, as ``grade`` is by default.

``--class-scale N`` measures instead how a class scales (``class_scale``): the floor of 1 per chapter, then a
generated class of N submissions (students x chapters: each student hands in every chapter, perfect, partial or
blank) graded by ``python -m autograder grade`` with each ``--jobs`` value on the gradebooks ``--db`` names
(SQLite, a PostgreSQL server started for the run, or both); for each run the throughput (submissions per hour)
and the wall time over the floor's ideal (the chapters' floors summed over the class, divided by min(jobs,
cores)), with the load average before and after. ``--json FILE`` also writes the numbers (the instructor guide's
are in book/data/class_scale.json).

Everything runs in temporary course folders; nothing of the real course/ is touched. The submissions are the
tests' synthetic class (tests/synthetic/), taken from the checkout by ``synthetic_builder``, and the PostgreSQL
server is the tests' throwaway one (tests/postgres.py): the benchmark needs a checkout anyway (solutions/,
lessons/, tests/), which is why it lives in tools/ and not in the installed package.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import importlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import nbgrader.api

from autograder import config, course, gradebook, preprocessors, submissions


def _load():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def _from_tests(module: str):
    tests = str(course.ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    return importlib.import_module(module)


def synthetic_builder():
    """``Builder`` of tests/synthetic (the generated submissions the tests grade), imported from the checkout."""
    return _from_tests("synthetic").Builder


def per_submission(names, repeat: int, workdir: Path, builder) -> list[dict]:
    """Median autograde seconds of a correct and of an empty submission, per chapter (one process).

    The empty submission is graded with nbgrader's add_missing_cells off, so that nothing of the chapter
    runs: what remains is the kernel's start-up and nbgrader's own work, the floor."""
    os.environ["POSENC_COURSE_DIR"] = str(workdir / "per_submission")
    cfg = config.load_config()
    failures = gradebook.sync_assignments(names, cfg)
    for message in failures.values():
        print(f"  skipped: {message}")
    names = [n for n in names if n not in failures]
    floor_cfg = copy.deepcopy(cfg)
    floor_cfg.OverwriteCells.add_missing_cells = False
    apis = {"correct": gradebook.api(cfg), "empty": gradebook.api(floor_cfg)}
    empty = nbformat.v4.new_notebook()
    empty.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    rows = []
    for name in names:
        notebooks = {"empty": empty, "correct": builder(name).perfect().notebook}
        subs = {}
        for kind, nb in notebooks.items():
            student = f"bench_{kind}"
            gradebook.register_students([student], cfg)
            folder = workdir / "in" / student / name
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, folder / f"{name}.ipynb")
            subs[kind] = submissions.Submission(student, name, folder)
        samples = {kind: [] for kind in notebooks}
        for _ in range(repeat):  # alternating, so that a change of the machine's load hits both kinds alike
            for kind, sub in subs.items():
                submissions.copy_in(sub, cfg)
                start = time.perf_counter()
                with gradebook.session():
                    result = apis[kind].autograde(name, sub.student, force=True, create=True)
                samples[kind].append(time.perf_counter() - start)
                if not result["success"]:
                    raise SystemExit(f"autograding the {kind} {name} submission failed:\n"
                                     f"{gradebook.last_error(result)}")
        times = {kind: statistics.median(values) for kind, values in samples.items()}
        rows.append({"chapter": name, "empty": times["empty"], "correct": times["correct"],
                     "ratio": times["correct"] / times["empty"]})
        print(f"  {name}: correct {times['correct']:.1f} s, empty {times['empty']:.1f} s, "
              f"ratio {times['correct'] / times['empty']:.2f}", flush=True)
    return rows


def make_class(names, size: int, folder: Path, builder) -> None:
    """``size`` submissions: student i hands in chapter i mod n, perfect / partial / blank in turn."""
    builders = {name: builder(name) for name in names}
    made = {}
    for i in range(size):
        name = names[i % len(names)]
        kind = ("perfect", "partial", "blank")[(i // len(names)) % 3]
        if (name, kind) not in made:
            made[(name, kind)] = getattr(builders[name], kind)().notebook
        path = folder / f"s{i:03d}" / name / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(made[(name, kind)], path)


def whole_class(folder: Path, jobs: int, workdir: Path, db_url: str | None = None,
                label: str = "") -> tuple[float, float]:
    """Wall seconds of `python -m autograder grade FOLDER --jobs JOBS` in a new course folder, on the SQLite
    gradebook or on the database ``db_url`` names, and the seconds of its autograde phase alone (what it prints
    as "autograded in"; the rest is the sandbox's check, putting the chapters in the gradebook, copying the
    submissions in and reading the scores back)."""
    env = {k: v for k, v in os.environ.items() if k != gradebook.ENV}
    env["POSENC_COURSE_DIR"] = str(workdir / f"class_jobs{jobs}{label}")
    if db_url:
        env[gradebook.ENV] = db_url
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--jobs", str(jobs)],
                            cwd=course.ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode:
        raise SystemExit(f"grading the class with --jobs {jobs} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    autograded = re.search(r"^autograded in ([0-9.]+) s$", result.stdout, re.M)
    return seconds, float(autograded.group(1)) if autograded else float("nan")


def make_students(names, size: int, folder: Path, builder) -> dict[str, int]:
    """A class of ``size`` submissions as a course has them: student k hands in every chapter of ``names`` in
    turn (the last student may hand in fewer), a perfect, partial or blank notebook by student (k mod 3).
    Returns the number of submissions per chapter."""
    builders = {name: builder(name) for name in names}
    made, per_chapter = {}, dict.fromkeys(names, 0)
    for i in range(size):
        student, name = i // len(names), names[i % len(names)]
        kind = ("perfect", "partial", "blank")[student % 3]
        if (name, kind) not in made:
            made[(name, kind)] = getattr(builders[name], kind)().notebook
        path = folder / f"s{student:04d}" / name / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(made[(name, kind)], path)
        per_chapter[name] += 1
    return per_chapter


def graded_count(db_url: str) -> int:
    """Submissions in a gradebook (each run's check that none was lost)."""
    with gradebook.session(), nbgrader.api.Gradebook(db_url, "posenc") as gb:
        return sum(len(a.submissions) for a in gb.assignments)


def class_scale(names, size: int, dbs, jobs_values, floors: dict[str, float], workdir: Path, builder) -> dict:
    """Grade a generated class of ``size`` submissions with each --jobs value on each gradebook of ``dbs``
    ("sqlite", "postgres"); returns the numbers (``--json``'s content)."""
    folder = workdir / "scale_class"
    per_chapter = make_students(names, size, folder, builder)
    floor_total = sum(floors[name] * n for name, n in per_chapter.items())
    cores = os.cpu_count() or 1
    runs = []
    with contextlib.ExitStack() as stack:
        server = None
        if "postgres" in dbs:
            postgres = _from_tests("postgres")
            if postgres.missing():
                raise SystemExit(f"--db postgres: {postgres.missing()}")
            server = stack.enter_context(postgres.Server.started())
        for jobs in jobs_values:
            for db in dbs:
                label = f"_{db}"
                if db == "postgres":
                    db_url = server.create_database(f"class_jobs{jobs}")
                    read_url = db_url
                else:
                    db_url = None
                    read_url = f"sqlite:///{workdir / f'class_jobs{jobs}{label}' / 'gradebook.db'}"
                load_before = _load()
                seconds, autograding = whole_class(folder, jobs, workdir, db_url, label)
                load_after = _load()
                graded = graded_count(read_url)
                if graded != size:
                    raise SystemExit(f"--db {db} --jobs {jobs}: {graded} of {size} submissions in the gradebook")
                ideal = floor_total / min(jobs, cores)
                runs.append({"db": db, "jobs": jobs, "seconds": round(seconds, 1),
                             "autograde_seconds": round(autograding, 1), "graded": graded,
                             "per_hour": round(size / seconds * 3600), "floor_ideal_seconds": round(ideal, 1),
                             "ratio_to_floor": round(seconds / ideal, 2), "load_before": round(load_before, 2),
                             "load_after": round(load_after, 2)})
                print(f"  {db:8s} --jobs {jobs}: {seconds:.0f} s (autograde {autograding:.0f} s), "
                      f"{size / seconds * 3600:.0f} submissions/hour, "
                      f"{seconds / ideal:.2f} x the floor's {ideal:.0f} s (load {load_before:.1f} -> "
                      f"{load_after:.1f})", flush=True)
    return {"submissions": size, "students": -(-size // len(names)), "chapters": list(names),
            "per_chapter": per_chapter, "cpus": cores, "floor_seconds": {n: round(floors[n], 2) for n in names},
            "floor_total_seconds": round(floor_total, 1), "runs": runs}


def alternating(name: str, configs: dict, repeat: int, workdir: Path, builder) -> dict:
    """Median autograde seconds of one correct submission of chapter ``name`` under each nbgrader config in
    ``configs`` ({kind: config}), the kinds graded in turn in one process, so that a change in the
    machine's load hits them alike. The first round warms the caches and is not counted."""
    os.environ["POSENC_COURSE_DIR"] = str(workdir / "course")
    cfg = config.load_config()
    failures = gradebook.sync_assignments([name], cfg)
    if failures:
        raise RuntimeError(failures[name])
    apis = {kind: gradebook.api(kind_cfg) for kind, kind_cfg in configs.items()}
    nb = builder(name).perfect().notebook
    students = {kind: f"bench_{kind}" for kind in apis}
    gradebook.register_students(students.values(), cfg)
    for student in students.values():
        path = Path(cfg.CourseDirectory.submitted_directory) / student / name / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(path))
    times = {kind: [] for kind in apis}
    for _ in range(repeat + 1):
        for kind, api in apis.items():
            start = time.perf_counter()
            with gradebook.session():
                result = api.autograde(name, students[kind], force=True, create=True)
            if not result["success"]:
                raise RuntimeError(f"{kind} autograde of {name} failed: {gradebook.last_error(result)}")
            times[kind].append(time.perf_counter() - start)
    return {kind: statistics.median(t[1:]) for kind, t in times.items()}


def sandbox_cost(name: str, repeat: int, workdir: Path, builder) -> dict:
    """Sandboxed against unsandboxed autograde of one correct submission of ``name``."""
    os.environ["POSENC_COURSE_DIR"] = str(workdir / "course")
    row = alternating(name, {"unsandboxed": config.load_config(sandboxed=False), "sandboxed": config.load_config()},
                      repeat, workdir, builder)
    row["ratio"] = row["sandboxed"] / row["unsandboxed"]
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/bench_grading.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="autograde runs per chapter and kind (median)")
    parser.add_argument("--class-size", type=int, default=100, help="submissions in the class (0: skip)")
    parser.add_argument("--jobs", type=int, nargs="*", default=[1, 2], help="--jobs values to time the class with")
    parser.add_argument("--chapters", nargs="*", help="chapters (default: all)")
    parser.add_argument("--sandbox-chapter", default=None,
                        help="chapter whose sandboxed/unsandboxed ratio is measured (default: the first; '' skips)")
    parser.add_argument("--class-scale", type=int, default=None, metavar="N",
                        help="instead of the above: grade a class of N submissions (students x --chapters) with each "
                             "--jobs value on each --db gradebook, and report its throughput")
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both",
                        help="the gradebook(s) --class-scale grades into (postgres: a server started for the run)")
    parser.add_argument("--json", type=Path, help="with --class-scale: also write its numbers to this file")
    args = parser.parse_args(argv)
    names = args.chapters or course.assignments()
    unknown = [n for n in names if n not in course.assignments()]
    if unknown:
        parser.error(f"--chapters: no chapter {unknown[0]!r}; the chapters are {', '.join(course.assignments())}")
    if any(j < 1 for j in args.jobs):
        parser.error(f"--jobs: each value must be at least 1, got {' '.join(map(str, args.jobs))}")
    if args.class_scale is not None and args.class_scale < 1:
        parser.error(f"--class-scale: the number of submissions must be at least 1, got {args.class_scale}")
    if args.json and not args.class_scale:
        parser.error("--json: only --class-scale writes its numbers to a file")
    os.environ.pop(gradebook.ENV, None)  # the bench grades into gradebooks of its own, never the course's
    gradebook.find_alembic()  # it creates them through nbgrader's API, as the command line does
    builder = synthetic_builder()
    print(f"{os.cpu_count()} CPUs, load average {_load():.1f} at start")
    if args.class_scale:
        return scale_main(args, names, builder)
    with tempfile.TemporaryDirectory(prefix="posenc-bench-") as tmp:
        workdir = Path(tmp)
        print(f"autograde seconds per submission (median of {args.repeat}):", flush=True)
        rows = per_submission(names, args.repeat, workdir, builder)
        names = [r["chapter"] for r in rows]
        print("\n| chapter | correct submission (s) | empty notebook (s) | ratio |\n|---|---|---|---|")
        for r in rows:
            print(f"| {r['chapter']} | {r['correct']:.1f} | {r['empty']:.1f} | {r['ratio']:.2f} |")
        if args.class_size:
            folder = workdir / "class"
            make_class(names, args.class_size, folder, builder)
            print(f"\nwall time to grade {args.class_size} submissions "
                  f"(`python -m autograder grade CLASS --jobs N`):", flush=True)
            timings = {}
            for jobs in args.jobs:
                timings[jobs] = whole_class(folder, jobs, workdir)[0]
                print(f"  --jobs {jobs}: {timings[jobs]:.0f} s ({timings[jobs] / args.class_size:.1f} s per "
                      f"submission)", flush=True)
            if 1 in timings:
                for jobs, seconds in timings.items():
                    if jobs != 1:
                        print(f"  speed-up of --jobs {jobs}: {timings[1] / seconds:.2f}x")
        sandbox_chapter = names[0] if args.sandbox_chapter is None else args.sandbox_chapter
        if sandbox_chapter:
            row = sandbox_cost(sandbox_chapter, args.repeat, workdir / "sandbox", builder)
            print(f"\nthe sandbox's cost per submission, {sandbox_chapter}, median of {args.repeat}: unsandboxed "
                  f"{row['unsandboxed']:.2f} s, sandboxed {row['sandboxed']:.2f} s, ratio {row['ratio']:.2f} "
                  "(target <= 1.2)", flush=True)
    print(f"load average {_load():.1f} at the end")
    return 0


GRADEBOOKS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def scale_table(result: dict) -> str:
    """The runs of ``--class-scale`` as the markdown table the instructor guide shows (and its test compares)."""
    lines = ["| gradebook | `--jobs` | wall time (s) | submissions per hour | over the floor's ideal | load average "
             "before → after |", "|---|---|---|---|---|---|"]
    lines += [f"| {GRADEBOOKS[r['db']]} | {r['jobs']} | {r['seconds']:.0f} | {r['per_hour']} | "
              f"{r['ratio_to_floor']:.2f} | {r['load_before']:.1f} → {r['load_after']:.1f} |" for r in result["runs"]]
    return "\n".join(lines)


def scale_main(args, names, builder) -> int:
    """``--class-scale N``: the chapters' floors, then the class graded with each --jobs on each --db."""
    dbs = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = _load()
    with tempfile.TemporaryDirectory(prefix="posenc-bench-") as tmp:
        workdir = Path(tmp)
        print(f"the floor per chapter: an empty notebook's autograde (median of {args.repeat}):", flush=True)
        rows = per_submission(names, args.repeat, workdir, builder)
        floors = {r["chapter"]: r["empty"] for r in rows}
        names = [r["chapter"] for r in rows]
        print(f"\na class of {args.class_scale} submissions ({', '.join(names)}) graded by `python -m autograder "
              f"grade CLASS --jobs N`, sandboxed:", flush=True)
        result = class_scale(names, args.class_scale, dbs, args.jobs, floors, workdir, builder)
    result = {"command": "python tools/bench_grading.py " + " ".join(
                  ["--class-scale", str(args.class_scale), "--db", args.db, "--repeat", str(args.repeat),
                   "--jobs", *map(str, args.jobs), "--chapters", *names]),
              "date": started.strftime("%Y-%m-%d"), "load_start": round(load_start, 2),
              "load_end": round(_load(), 2), **result}
    print(f"load average {result['load_end']:.1f} at the end\n\n{scale_table(result)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
