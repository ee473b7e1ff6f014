"""How many students the course's JupyterHub holds on this machine: real single-user servers, each with a running
kernel that imports the course, added step by step while the script measures memory and responsiveness.
Each step's new students log in together (``--parallel`` at a time, as a class arriving), then their kernels
start one after the other.

Run as root from the checkout, with `make install` and `make assets` done (the hub's requirements):

    sudo .venv/bin/python tools/hub_capacity.py --students 1 2 4 8 16 24
    sudo .venv/bin/python tools/hub_capacity.py --students 1 2 4 8 16 24 --torch --json capacity-torch.json

What it does: makes N temporary Unix users (a private home each) and an instructor, closes the checkout's
instructor-only folders as the hub requires, starts the hub as `make hub` does (hub/jupyterhub_config.py, the
shared-password authenticator), then for each step logs students in over HTTP as a browser does (the login form
with its _xsrf field, the hub's cookies, the OAuth redirects to the user's server), waits for each server, starts a
kernel through the server's REST API (/user/<name>/api/kernels) and runs ``import numpy, posenc,
autograder.checks`` in it over the kernel's websocket (with ``--torch``, ``import torch`` too: chapters 3, 4, 6 and
8 use it). At each step it measures:

- memory per student: the PSS (proportional set size: shared pages split between the processes sharing them) of
  all of that user's processes (JupyterLab's server and the kernel), and the same as RSS;
- the machine: memory available, swap used, the load average;
- the hub: the latency of its REST API (``GET /hub/api/``, 20 requests) and of a logged-in page (``GET
  /hub/home``), and the memory of its processes (JupyterHub, its proxy, the idle culler);
- the kernels: the round trip of a small execute request (``sum(range(10**5))``) on every student's kernel in turn,
  and a cell that keeps a core busy for a moment run by one kernel alone, then by every kernel at once (a class
  pressing Run together: the machine's cores are shared, so that time grows with the class).

It stops early, before the next step, when memory available falls under ``--min-available`` (fraction of the
total), the hub's API median exceeds ``--max-api-ms`` or the execute round trip's median exceeds
``--max-exec-ms``. Every user, process and file it made is removed at the end, after a failure or Ctrl-C too.
The kernels are idle between measurements: a class running a chapter's cells (training a model in chapter 8)
uses more memory and CPU than this measures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import pwd
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import requests
from tornado.httpclient import HTTPRequest
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError, websocket_connect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hub_harness import ROOT, VENV_BIN, Hub, closed_to_students, free_port, processes_of, unix_users  # noqa: E402

COURSE_IMPORT = "import numpy, posenc, autograder.checks"
TORCH_IMPORT = "import torch"
PROBE = "sum(range(10**5))"
# A cell that keeps one core busy for a moment (about 0.3 s here), run by every student's kernel at once: a class
# pressing Run together, which the machine's cores share
BUSY = "sum(i * i for i in range(2_000_000))"


class Student:
    """One student's browser session: logged in, their server, one kernel with an open websocket."""

    def __init__(self, hub_url: str, name: str, password: str):
        self.hub_url, self.name, self.password = hub_url, name, password
        self.http = requests.Session()
        self.kernel = None
        self.ws = None
        self.session = uuid.uuid4().hex
        self.reconnects: list[str] = []  # why the websocket had closed, each time it was opened again

    def log_in_and_spawn(self, timeout: float) -> float:
        """The login form, as a browser posts it; then wait until the user's JupyterLab answers. Seconds taken."""
        start = time.monotonic()
        form = self.http.get(f"{self.hub_url}/hub/login", timeout=30)
        xsrf = re.search(r'name="_xsrf"\s+value="([^"]+)"', form.text).group(1)
        self.http.post(f"{self.hub_url}/hub/login?next=", timeout=60,
                       data={"username": self.name, "password": self.password, "_xsrf": xsrf})
        while True:
            lab = self.http.get(f"{self.hub_url}/user/{self.name}/lab", timeout=60)
            if lab.status_code == 200 and lab.url.rstrip("/").endswith(f"/user/{self.name}/lab"):
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise RuntimeError(f"{self.name}'s server did not start in {timeout} s ({lab.status_code} {lab.url})")
            time.sleep(1)

    def _api(self, method: str, path: str, **kwargs):
        xsrf = self.http.cookies.get("_xsrf", path=f"/user/{self.name}/") or self.http.cookies.get("_xsrf")
        answer = self.http.request(method, f"{self.hub_url}/user/{self.name}/api/{path}", timeout=60,
                                   headers={"X-XSRFToken": xsrf or ""}, **kwargs)
        answer.raise_for_status()
        return answer.json() if answer.content else None

    async def start_kernel(self) -> None:
        spec = self._api("GET", "kernelspecs")["default"]
        self.kernel = self._api("POST", "kernels", json={"name": spec})["id"]
        await self.connect()

    async def connect(self) -> None:
        """The kernel's websocket, opened (again) as JupyterLab opens it."""
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.http.cookies)
        xsrf = self.http.cookies.get("_xsrf", path=f"/user/{self.name}/") or ""
        url = (self.hub_url.replace("http://", "ws://")
               + f"/user/{self.name}/api/kernels/{self.kernel}/channels?session_id={self.session}&_xsrf={xsrf}")
        self.ws = await websocket_connect(HTTPRequest(url, headers={"Cookie": cookies}, connect_timeout=60))

    async def execute(self, code: str, timeout: float = 300) -> float:
        """Run code in the kernel over its websocket; seconds until its execute_reply. Raises on an error."""
        msg_id = uuid.uuid4().hex
        message = {"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": self.name,
                              "session": self.session, "date": datetime.datetime.now(datetime.UTC).isoformat(),
                              "version": "5.3"},
                   "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                   "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                               "allow_stdin": False, "stop_on_error": True}}
        start = time.monotonic()
        try:
            await self.ws.write_message(json.dumps(message))
        except (WebSocketClosedError, StreamClosedError):
            # closed while this script was not reading it (between steps the event loop does not run, so the
            # server's pings go unanswered): JupyterLab reconnects, and so does this
            self.reconnects.append(f"{self.ws.close_code} {self.ws.close_reason}")
            await self.connect()
            start = time.monotonic()
            await self.ws.write_message(json.dumps(message))
        error = None
        while True:
            raw = await asyncio.wait_for(self.ws.read_message(), timeout)
            if raw is None:
                raise RuntimeError(f"{self.name}'s kernel websocket closed: {self.ws.close_code} {self.ws.close_reason}")
            reply = json.loads(raw)
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = reply["header"]["msg_type"]
            if kind == "error":
                error = f"{reply['content']['ename']}: {reply['content']['evalue']}"
            if kind == "execute_reply" and reply.get("channel") == "shell":
                elapsed = time.monotonic() - start
                if reply["content"]["status"] != "ok":
                    raise RuntimeError(f"{self.name}'s kernel: {code!r} failed: {error}")
                return elapsed

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
        self.http.close()


def memory_of(uid: int) -> tuple[float, float, int]:
    """PSS and RSS (MB) of every process of the user, and how many there are."""
    pss = rss = count = 0
    for proc in processes_of({uid}):
        with contextlib.suppress(psutil.Error):
            info = proc.memory_full_info()
            pss += info.pss
            rss += info.rss
            count += 1
    return pss / 1e6, rss / 1e6, count


def hub_memory(hub: Hub) -> float:
    """RSS (MB) of the hub's own processes, those running as root: make, JupyterHub, its proxy, the idle culler (the
    users' servers are its children too, as their users)."""
    total = 0
    with contextlib.suppress(psutil.Error):
        top = psutil.Process(hub.proc.pid)
        for proc in [top, *top.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                if proc.uids().real == 0:
                    total += proc.memory_info().rss
    return total / 1e6


def latency(get, n: int = 20) -> tuple[float, float]:
    """Median and largest time (ms) of n calls."""
    times = []
    for _ in range(n):
        start = time.monotonic()
        answer = get()
        answer.raise_for_status()
        times.append((time.monotonic() - start) * 1000)
    return statistics.median(times), max(times)


def measure(hub: Hub, students: list[Student], loop) -> dict:
    uids = [pwd.getpwnam(s.name).pw_uid for s in students]
    memory = [memory_of(uid) for uid in uids]
    api_median, api_max = latency(lambda: requests.get(f"{hub.url}/hub/api/", timeout=60))
    home_median, home_max = latency(lambda: students[0].http.get(f"{hub.url}/hub/home", timeout=60), n=10)
    execs = [loop.run_until_complete(s.execute(PROBE)) * 1000 for s in students]
    alone = loop.run_until_complete(students[0].execute(BUSY))

    async def together():
        start = time.monotonic()
        await asyncio.gather(*(s.execute(BUSY) for s in students))
        return time.monotonic() - start

    all_at_once = loop.run_until_complete(together())
    vm, swap = psutil.virtual_memory(), psutil.swap_memory()
    return {
        "students": len(students),
        "pss_per_student_mb": {"median": statistics.median(m[0] for m in memory), "max": max(m[0] for m in memory)},
        "rss_per_student_mb": {"median": statistics.median(m[1] for m in memory), "max": max(m[1] for m in memory)},
        "processes_per_student": max(m[2] for m in memory),
        "students_pss_total_mb": sum(m[0] for m in memory),
        "hub_rss_mb": hub_memory(hub),
        "available_mb": vm.available / 1e6, "total_mb": vm.total / 1e6, "swap_used_mb": swap.used / 1e6,
        "load_average": os.getloadavg(),
        "hub_api_ms": {"median": api_median, "max": api_max},
        "hub_home_ms": {"median": home_median, "max": home_max},
        "execute_ms": {"median": statistics.median(execs), "max": max(execs)},
        "busy_cell_alone_s": alone, "busy_cell_all_at_once_s": all_at_once,
        "websocket_reconnects": sorted(r for s in students for r in s.reconnects),
    }


def table(result: dict) -> str:
    rows = ["| students | PSS per student (MB), median / max | RSS per student (MB) | hub RSS (MB) | "
            "available (GB) | swap used (MB) | /hub/api/ (ms), median / max | /hub/home (ms) | execute (ms), "
            "median / max | busy cell alone / all at once (s) | spawn (s), median / max | load (1 min) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for step in result["steps"]:
        spawn = step.get("spawn_s", {"median": float("nan"), "max": float("nan")})
        rows.append(
            f"| {step['students']} | {step['pss_per_student_mb']['median']:.0f} / {step['pss_per_student_mb']['max']:.0f}"
            f" | {step['rss_per_student_mb']['median']:.0f} | {step['hub_rss_mb']:.0f}"
            f" | {step['available_mb'] / 1000:.1f} | {step['swap_used_mb']:.0f}"
            f" | {step['hub_api_ms']['median']:.0f} / {step['hub_api_ms']['max']:.0f}"
            f" | {step['hub_home_ms']['median']:.0f} / {step['hub_home_ms']['max']:.0f}"
            f" | {step['execute_ms']['median']:.0f} / {step['execute_ms']['max']:.0f}"
            f" | {step.get('busy_cell_alone_s', float('nan')):.2f} / {step.get('busy_cell_all_at_once_s', float('nan')):.1f}"
            f" | {spawn['median']:.1f} / {spawn['max']:.1f} | {step['load_average'][0]:.1f} |")
    return "\n".join(rows)


def guide_table(course: dict, torch: list[dict]) -> str:
    """The table of hub/README.md ("How many students"): the course's run beside the runs with torch, by class size;
    a size only the torch runs reached has its course columns empty."""
    by_size = {step["students"]: step for step in course["steps"]}
    torch_steps = {}
    for result in torch:  # (a size measured in two runs: the first run's)
        for step in result["steps"]:
            torch_steps.setdefault(step["students"], step)
    rows = ["| students | memory per student, course (PSS, MB) | with torch | available, course / torch (GB) | "
            "`/hub/api/` median (ms) | `/hub/home` median (ms) | small cell's round trip, median (ms) | "
            "login to JupyterLab, median (s) |", "|---" * 8 + "|"]

    def pair(key, fmt, scale=1.0, sub="median"):
        def one(step):
            if step is None:
                return "–"
            value = step[key][sub] if isinstance(step[key], dict) else step[key]
            return format(value * scale, fmt)
        return f"{one(c)} / {one(t)}"

    for size in sorted(set(by_size) | set(torch_steps)):
        c, t = by_size.get(size), torch_steps.get(size)
        rows.append(f"| {size} | {'–' if c is None else format(c['pss_per_student_mb']['median'], '.0f')}"
                    f" | {'–' if t is None else format(t['pss_per_student_mb']['median'], '.0f')}"
                    f" | {pair('available_mb', '.1f', 1e-3)} | {pair('hub_api_ms', '.0f')} | {pair('hub_home_ms', '.0f')}"
                    f" | {pair('execute_ms', '.0f')} | {pair('spawn_s', '.0f')} |")
    return "\n".join(rows)


def run(args) -> dict:
    imports = COURSE_IMPORT + ("; " + TORCH_IMPORT if args.torch else "")
    levels = sorted(set(args.students))
    tag, shared = secrets.token_hex(2), secrets.token_hex(8)
    instructor = f"pc{tag}t"
    names = [f"pc{tag}s{i:02d}" for i in range(levels[-1])]
    command = ["sudo", ".venv/bin/python", "tools/hub_capacity.py", "--students", *map(str, args.students),
               *(["--torch"] if args.torch else [])]  # (what was measured, without where it was written)
    result = {"date": datetime.date.today().isoformat(), "command": " ".join(command),
              "imports": imports, "cpus": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
              "machine": platform.machine(), "steps": [], "stopped": None}
    base = Path(tempfile.mkdtemp(prefix="posenc-capacity-"))
    os.chmod(base, 0o755)
    (base / "home").mkdir(mode=0o755)
    loop = asyncio.new_event_loop()
    students: list[Student] = []
    try:
        with unix_users(base / "home", [instructor, *names], comment="posenc hub capacity"), \
                closed_to_students(pwd.getpwnam(instructor).pw_gid):
            ports = [free_port() for _ in range(3)]
            env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(base), "LANG": "C.UTF-8",
                   "POSENC_HUB_DIR": str(base / "state"), "POSENC_HUB_PORT": str(ports[0]),
                   "POSENC_HUB_API_PORT": str(ports[1]), "POSENC_HUB_PROXY_API_PORT": str(ports[2]),
                   "POSENC_HUB_INSTRUCTOR": instructor, "POSENC_HUB_STUDENTS": " ".join(names),
                   "POSENC_HUB_PASSWORD": shared, "POSENC_HUB_INSTRUCTOR_PASSWORD": secrets.token_hex(20)}
            hub = Hub(env, base / "hub.log", base / "python-view")
            hub.start()
            try:
                for level in levels:
                    # the step's new students log in together, --parallel at a time, as a class arriving
                    new = [Student(hub.url, names[i], shared) for i in range(len(students), level)]
                    students += new
                    with ThreadPoolExecutor(args.parallel) as pool:
                        spawns = list(pool.map(lambda s: s.log_in_and_spawn(args.spawn_timeout), new))
                    imports_s = []
                    for student in new:
                        loop.run_until_complete(student.start_kernel())
                        imports_s.append(loop.run_until_complete(student.execute(imports)))
                    time.sleep(args.settle)
                    step = measure(hub, students, loop)
                    step["spawn_s"] = {"median": statistics.median(spawns), "max": max(spawns)}
                    step["import_s"] = {"median": statistics.median(imports_s), "max": max(imports_s)}
                    result["steps"].append(step)
                    print(json.dumps(step), flush=True)
                    why = []
                    if step["available_mb"] < args.min_available * step["total_mb"]:
                        why.append(f"memory available under {args.min_available:.0%} of the total")
                    if step["swap_used_mb"] > 100:
                        why.append("swapping")
                    if step["hub_api_ms"]["median"] > args.max_api_ms:
                        why.append(f"/hub/api/ median over {args.max_api_ms} ms")
                    if step["execute_ms"]["median"] > args.max_exec_ms:
                        why.append(f"execute round trip median over {args.max_exec_ms} ms")
                    if why:
                        result["stopped"] = f"after {level} students: " + "; ".join(why)
                        break
            finally:
                for student in students:
                    student.close()
                hub.stop()
    finally:
        loop.close()
        subprocess.run(["rm", "-rf", "--one-file-system", str(base)])
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, nargs="+", default=[1, 2, 4, 8, 16, 24],
                        help="the steps: how many students are logged in, each with a kernel, at each measurement")
    parser.add_argument("--torch", action="store_true", help="each kernel imports torch too (chapters 3, 4, 6, 8)")
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument("--settle", type=float, default=5, help="seconds to wait after a step's spawns")
    parser.add_argument("--parallel", type=int, default=4, help="how many of a step's students log in at once")
    parser.add_argument("--spawn-timeout", type=float, default=180)
    parser.add_argument("--min-available", type=float, default=0.15)
    parser.add_argument("--max-api-ms", type=float, default=1000)
    parser.add_argument("--max-exec-ms", type=float, default=2000)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("run as root: the hub starts every student's server as that Unix user")
    # Ctrl-C or a kill: unwind through the cleanup (users, processes, files) rather than die in place
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\n{result['date']}, {result['cpus']} cores, {result['memory_gb']} GiB; kernels ran: {result['imports']}")
    print(table(result))
    print(f"stopped early: {result['stopped']}" if result["stopped"] else "every step ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
