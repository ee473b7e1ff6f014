"""nbgrader's autograde on many submissions: one after the other in this process, or ``jobs`` at a time in worker
processes that share the gradebook, under the configuration given (sandboxed or not: ``autograder.config``)."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import time
from pathlib import Path

from . import course, gradebook, printable

_worker_api = None  # in a worker process: nbgrader's API on the configuration the pool was given


def _worker_init(cfg) -> None:
    global _worker_api
    printable.guard_standard_streams()  # (a new interpreter: what nbgrader logs here reaches the terminal too)
    _worker_api = gradebook.api(cfg)


def in_progress_dir() -> Path:
    """Where each worker notes the submission it is grading (``<assignment>__<student>``, holding its pid): when
    a worker dies, what it was grading is known."""
    return course.course_dir() / "in_progress"


def _autograde_one(assignment: str, student: str, api=None) -> dict:
    """Run nbgrader autograde for one submission (in this process); never raises."""
    api = api or _worker_api
    start = time.perf_counter()
    marker = in_progress_dir() / f"{assignment}__{student}"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(os.getpid()))
    try:
        with gradebook.session():
            result = api.autograde(assignment, student, force=True, create=True)
    except Exception as exc:  # nbgrader's API reports failures in its result; this is a last resort
        result = {"success": False, "error": f"{type(exc).__name__}: {exc}", "log": ""}
    finally:
        marker.unlink(missing_ok=True)
    outcome = {"assignment": assignment, "student": student, "success": bool(result["success"]),
               "error": None if result["success"] else gradebook.last_error(result),
               "seconds": time.perf_counter() - start}
    down = None if result["success"] else gradebook.unreachable(api.coursedir.db_url)
    if down:  # a failure of the database, not of the submission
        outcome.update(error=down, unavailable=down)
    return outcome


def _skipped(assignment: str, student: str, why: str) -> dict:
    """A submission not graded because the gradebook stopped answering before its turn."""
    return {"assignment": assignment, "student": student, "success": False, "seconds": 0.0, "skipped": True,
            "error": why, "unavailable": why}


def _died(assignment: str, student: str, why: str) -> dict:
    return {"assignment": assignment, "student": student, "success": False, "seconds": 0.0, "died": True,
            "error": f"the grading process died while grading it ({why}; killed, or out of memory?)"}


def _pool_round(pairs, cfg, jobs, report, results) -> tuple[list, list]:
    """Grade ``pairs`` in one pool of ``jobs`` workers. A worker that dies breaks the pool and every unfinished
    future with it: returns (the submissions being graded then, by the workers' notes; those still waiting)."""
    context = multiprocessing.get_context("spawn")  # a clean interpreter: no inherited kernels or sockets
    unfinished, down = [], None
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(pairs)), mp_context=context,
                                                initializer=_worker_init, initargs=(cfg,)) as pool:
        futures = {pool.submit(_autograde_one, a, s): (a, s) for a, s in pairs}
        for future in concurrent.futures.as_completed(futures):
            try:
                result = future.result()
            except concurrent.futures.CancelledError:  # not started: the gradebook stopped answering
                results.append(_skipped(*futures[future], down))
                continue
            except concurrent.futures.process.BrokenProcessPool:
                unfinished.append(futures[future])
                continue
            except Exception as exc:  # the result could not come back: that submission alone
                result = _died(*futures[future], f"{type(exc).__name__}: {exc}")
            report(result)
            if result.get("unavailable") and down is None:
                down = result["unavailable"]
                for other in futures:
                    other.cancel()  # those not running yet; the running ones end on their own
    busy = [pair for pair in unfinished if (in_progress_dir() / f"{pair[0]}__{pair[1]}").exists()]
    for pair in busy:
        (in_progress_dir() / f"{pair[0]}__{pair[1]}").unlink(missing_ok=True)
    return busy, [pair for pair in unfinished if pair not in busy]


def autograde(pairs, cfg, jobs: int = 1, progress=None) -> list[dict]:
    """Autograde (assignment, student) pairs under ``cfg``: in this process when jobs == 1, else in ``jobs``
    worker processes. A submission whose worker dies (killed, out of memory) is graded once more, alone once
    only suspects are left; if its worker dies again, it is reported (``died``). When the gradebook's database
    server stops answering, grading stops: that result carries ``unavailable`` (``gradebook.unreachable``'s
    line), and the submissions not graded are ``skipped``."""
    pairs, results = list(pairs), []

    def report(result):
        results.append(result)
        if progress:
            progress(result)

    if jobs <= 1 or len(pairs) <= 1:
        api = gradebook.api(cfg)
        for index, (assignment, student) in enumerate(pairs):
            report(_autograde_one(assignment, student, api))
            if results[-1].get("unavailable"):
                results += [_skipped(a, s, results[-1]["unavailable"]) for a, s in pairs[index + 1:]]
                break
        return results
    waiting, retried, stalled = pairs, set(), 0
    while waiting:
        done_before = len(results)
        busy, waiting = _pool_round(waiting, cfg, jobs, report, results)
        down = next((r["unavailable"] for r in results if r.get("unavailable")), None)
        if down:  # the gradebook stopped answering: nothing more can be graded now
            results += [_skipped(*pair, down) for pair in busy + waiting]
            break
        stalled = stalled + 1 if not busy and len(results) == done_before else 0
        if stalled >= 2:  # workers that die before grading anything (they cannot even start)
            for pair in waiting:
                report(_died(*pair, "before it started: the workers could not run"))
            break
        for pair in busy:
            if pair in retried:
                report(_died(*pair, "twice"))
            else:
                retried.add(pair)
                waiting.append(pair)
        if busy and all(pair in retried for pair in waiting):
            jobs = 1  # only suspects are left: one at a time, so that a death names its submission
    return sorted(results, key=lambda r: (r["assignment"], r["student"]))
