"""nbgrader autograde on many submissions: one after the other in this process, or ``jobs`` at a time in worker
processes that share the gradebook. Each submission is one run of nbgrader's own autograde under the
configuration it is given (sandboxed or not: ``autograder.config``); a worker that dies (killed, out of memory)
costs only what it was grading. A gradebook whose database server stops answering stops the run: the submissions
not started yet are left for the next one (``skipped``), and every grade already written stays."""

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
    """Where each worker notes the submission it is grading (``<assignment>__<student>``, holding its pid):
    when a worker dies, what it was grading is known, and an instructor can see what is being graded."""
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
    if not result["success"]:
        down = gradebook.unreachable(api.coursedir.db_url)  # a failure of the database, not of the submission?
        if down:
            outcome.update(error=down, unavailable=down)
    return outcome


def _skipped(assignment: str, student: str, why: str) -> dict:
    """A submission not graded because the gradebook stopped answering before its turn."""
    return {"assignment": assignment, "student": student, "success": False, "seconds": 0.0, "skipped": True,
            "error": why, "unavailable": why}


def _died(assignment: str, student: str, why: str) -> dict:
    return {"assignment": assignment, "student": student, "success": False, "seconds": 0.0, "died": True,
            "error": f"the grading process died while grading it ({why}; killed, or out of memory?)"}


def _pool_round(pairs, cfg, jobs, progress, results) -> tuple[list, list]:
    """Grade ``pairs`` in one pool of ``jobs`` workers. When a worker dies, the pool breaks and every
    unfinished future fails with it: returns (the submissions that were being graded then, the ones still
    waiting), told apart by the workers' in-progress notes."""
    context = multiprocessing.get_context("spawn")  # a clean interpreter: no inherited kernels or sockets
    unfinished = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(pairs)), mp_context=context,
                                                initializer=_worker_init, initargs=(cfg,)) as pool:
        futures = {pool.submit(_autograde_one, a, s): (a, s) for a, s in pairs}
        down = None
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
            results.append(result)
            if progress:
                progress(result)
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
    worker processes that share the gradebook (each submission is one nbgrader autograde run). A worker that
    dies (killed, out of memory) costs only what it was grading: the pool is rebuilt for the others, and each
    submission that was being graded when a worker died is graded once more alone; if its worker dies
    again, that submission alone is reported. When a submission fails because the gradebook's database server
    does not answer, its result and those of the submissions not graded yet carry ``unavailable`` (the one-line
    message of ``gradebook.unreachable``); the latter are ``skipped``, and grading stops."""
    pairs = list(pairs)
    results = []
    if jobs <= 1 or len(pairs) <= 1:
        api = gradebook.api(cfg)
        for index, (assignment, student) in enumerate(pairs):
            results.append(_autograde_one(assignment, student, api))
            if progress:
                progress(results[-1])
            if results[-1].get("unavailable"):
                results += [_skipped(a, s, results[-1]["unavailable"]) for a, s in pairs[index + 1:]]
                break
        return results
    waiting, retried, stalled = pairs, set(), 0
    while waiting:
        done_before = len(results)
        busy, waiting = _pool_round(waiting, cfg, jobs, progress, results)
        down = next((r["unavailable"] for r in results if r.get("unavailable")), None)
        if down:  # the gradebook stopped answering: nothing more can be graded now
            results += [_skipped(*pair, down) for pair in busy + waiting]
            break
        stalled = stalled + 1 if not busy and len(results) == done_before else 0
        if stalled >= 2:  # workers that die before grading anything (they cannot even start)
            for pair in waiting:
                results.append(_died(*pair, "before it started: the workers could not run"))
                if progress:
                    progress(results[-1])
            break
        for pair in busy:
            if pair in retried:
                results.append(_died(*pair, "twice"))
                if progress:
                    progress(results[-1])
            else:
                retried.add(pair)
                waiting.append(pair)
        if busy and all(pair in retried for pair in waiting):
            jobs = 1  # only suspects are left: one at a time, so that a death names its submission
    return sorted(results, key=lambda r: (r["assignment"], r["student"]))
