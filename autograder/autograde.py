"""nbgrader's autograde on many submissions, in this process or in ``jobs`` worker processes (``autograde``)."""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent import futures as cf

from . import course, gradebook, printable

_worker_api = None  # in a worker process: nbgrader's API on the configuration the pool was given


def _worker_init(cfg) -> None:
    global _worker_api
    printable.guard_standard_streams()  # (a new interpreter: what nbgrader logs here reaches the terminal too)
    _worker_api = gradebook.api(cfg)


def _marker(assignment: str, student: str):
    """Where a worker notes, with its pid, the submission it is grading: when it dies, what it graded is known."""
    return course.course_dir() / "in_progress" / f"{assignment}__{student}"


def _autograde_one(assignment: str, student: str, api=None) -> dict:
    """Run nbgrader autograde for one submission (in this process); never raises."""
    api = api or _worker_api
    start = time.perf_counter()
    marker = _marker(assignment, student)
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
    if not result["success"] and (down := gradebook.unreachable(api.coursedir.db_url)):  # the database's failure
        outcome.update(error=down, unavailable=down)
    return outcome


def _died(assignment: str, student: str, why: str) -> dict:
    return {"assignment": assignment, "student": student, "success": False, "seconds": 0.0, "died": True,
            "error": f"the grading process died while grading it ({why}; killed, or out of memory?)"}


def autograde(pairs, cfg, jobs: int = 1, progress=lambda result: None) -> list[dict]:
    """Autograde (assignment, student) pairs under ``cfg`` (in this process when jobs == 1, else in ``jobs``
    workers), results sorted. A submission whose worker dies (killed, out of memory) is graded once more, alone
    once only suspects are left, then reported ``died``, as is each when the workers cannot start. When the
    gradebook's server stops answering, that result carries ``unavailable`` and the rest are ``skipped``."""
    pairs, results = list(pairs), []

    def report(result):
        results.append(result)
        progress(result)

    def down():
        return next((r["unavailable"] for r in results if r.get("unavailable")), None)

    serial = jobs <= 1 or len(pairs) <= 1
    if serial:
        api = gradebook.api(cfg)
        for pair in pairs:
            if not down():
                report(_autograde_one(*pair, api))
    waiting, retried, stalled = [] if serial else pairs, set(), 0
    while waiting and not down():  # a round: one pool, until it ends or a worker's death breaks it
        done_before, broken = len(results), []
        # one worker once only suspects are left: a death then names its submission
        with cf.ProcessPoolExecutor(max_workers=1 if retried.issuperset(waiting) else min(jobs, len(waiting)),
                                    mp_context=multiprocessing.get_context("spawn"),  # no inherited kernels
                                    initializer=_worker_init, initargs=(cfg,)) as pool:
            futures = {pool.submit(_autograde_one, *pair): pair for pair in waiting}
            for future in cf.as_completed(futures):
                try:
                    result = future.result()
                except (cf.CancelledError, cf.process.BrokenProcessPool):  # (cancelled when the gradebook
                    broken.append(futures[future])  # stopped answering; a dead worker breaks every unfinished one)
                    continue
                except Exception as exc:  # the result could not come back: that submission alone
                    result = _died(*futures[future], f"{type(exc).__name__}: {exc}")
                report(result)
                if result.get("unavailable"):
                    for other in futures:
                        other.cancel()  # those not running yet; the running ones end on their own
        busy = [pair for pair in broken if _marker(*pair).exists()]  # (the others had not started)
        waiting = [pair for pair in broken if pair not in busy]
        stalled = stalled + 1 if not busy and len(results) == done_before else 0
        if stalled >= 2:  # workers that die before grading anything (they cannot even start)
            for pair in waiting:
                report(_died(*pair, "before it started: the workers could not run"))
            break
        for pair in busy:
            _marker(*pair).unlink()
            if pair in retried:
                report(_died(*pair, "twice"))
            else:
                retried.add(pair)
                waiting.append(pair)
    unavailable, graded = down(), {(r["assignment"], r["student"]) for r in results}
    results += [{"assignment": a, "student": s, "success": False, "seconds": 0.0, "skipped": True,
                 "error": unavailable, "unavailable": unavailable} for a, s in pairs if (a, s) not in graded]
    return sorted(results, key=lambda r: (r["assignment"], r["student"]))
