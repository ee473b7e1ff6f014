"""Run each submission's kernel in a bubblewrap sandbox while nbgrader autogrades it.

nbgrader executes a student's notebook with the grading process's own privileges: unguarded, a cell can
read the instructor's source notebook (the solutions), open the SQLite gradebook and rewrite every grade,
or reach the network. Here the kernel is started by ``SandboxKernelManager`` (a jupyter_client kernel
manager; nbgrader's Execute step uses it through ``autograder.preprocessors.SandboxedExecute``) inside
``bwrap``:

* the filesystem is an allow-list, all read-only: the system folders (/usr, /bin, /lib*, /etc), the Python
  installation and the virtualenv, ``posenc/``, ``book/data/`` (published data the lessons read), and of
  ``autograder/`` only the modules of ``KERNEL_MODULES`` (the test cells' helpers, the grader's agent and its
  wire format, the hook guard). Nothing else exists inside: not the repository (solutions/, the nbgrader
  config), not the course folder (gradebook, other submissions), not the instructor's home, not the folder the
  submissions were handed in from;
* the only writable places are a *copy* of the submission's working folder without its notebooks (nbgrader
  wrote the notebook being graded there with every test cell restored, hidden tests included), mounted where
  nbgrader runs the notebook (the copy is thrown away afterwards, so nothing a cell writes reaches a folder the
  grader later reads), and a private /tmp of limited size;
* no network (a network namespace of its own: not even the host's localhost), its own PID, IPC and UTS
  namespaces, a new session, an empty environment but for a few variables, and the sandbox dies with the
  grading process;
* resource limits set before ipykernel starts: address space (memory), processes (a fork bomb stops at
  the limit: as root the kernel runs under an unused uid, so that the limit binds; as another user, in a
  user namespace of its own, whose process count is private), file size, open files, no core dumps.
  Wall time per cell stays nbgrader's ``Execute.timeout`` and output size its ``LimitOutput``.

The kernel talks to nbgrader over ZeroMQ IPC sockets (``transport = "ipc"``) in a private folder bound
into the sandbox; interrupts are sent as messages (a signal to bwrap would not reach the kernel).
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from traitlets import Integer, List, Type, Unicode, default

from .course import ROOT
from .ipc_kernel import IpcKernelManager

INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: "
                "`sudo dnf install bubblewrap`), or grade on a Linux machine that has it")
UNSANDBOXED_WARNING = (
    "WARNING: --unsandboxed: students' code runs with YOUR privileges while it is graded. A submission can "
    "read the instructor's solutions (solutions/, the gradebook's copy of the source notebooks) and so score "
    "full marks, rewrite or delete every student's grades in the gradebook, read other students' "
    "submissions and your home folder, use the network, and exhaust the machine's memory and processes. "
    "Only grade submissions you trust this way.")

# Run inside the sandbox before ipykernel: limits, then (as root) an unprivileged uid, then exec the kernel.
_LAUNCHER = r"""
import json, os, resource, sys
spec = json.loads(sys.argv[1])
os.chmod("/tmp", 0o1777)
for name, value in spec["limits"].items():
    resource.setrlimit(getattr(resource, name), (value, value))
if spec["uid"] is not None and os.getuid() == 0:
    os.setgroups([])
    os.setresgid(spec["uid"], spec["uid"], spec["uid"])
    os.setresuid(spec["uid"], spec["uid"], spec["uid"])
os.umask(0o077)
os.execv(sys.argv[2], sys.argv[2:])
"""

# Variables passed into the sandbox (everything else is cleared: a grader's tokens stay outside).
PASS_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
            "PYTHONHASHSEED")


def bwrap_path() -> str | None:
    """The bwrap program: $POSENC_BWRAP if set (a path; the tests point it at a missing one), else on PATH."""
    if "POSENC_BWRAP" in os.environ:
        exe = os.environ["POSENC_BWRAP"]
        return exe if exe and os.access(exe, os.X_OK) else None
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=None)
def unavailable() -> str | None:
    """Why the sandbox cannot be used on this machine, in words; None when it can."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux (bubblewrap); this is {sys.platform}"
    exe = bwrap_path()
    if exe is None:
        return "bubblewrap (bwrap) is not installed: " + INSTALL_HINT
    probe = [exe, *_namespace_args(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        result = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not be run ({exc}): " + INSTALL_HINT
    if result.returncode:
        return (f"bwrap is installed but cannot create a sandbox here ({result.stderr.strip() or result.returncode}); "
                "unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1, "
                "or an AppArmor profile for bwrap on Ubuntu 24.04)")
    return None


def _namespace_args() -> list[str]:
    args = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session"]
    if os.geteuid() != 0:
        # Not root: a user namespace lets bwrap mount without privileges, and gives the kernel a process
        # count of its own (RLIMIT_NPROC then counts only the sandbox's processes).
        args.insert(0, "--unshare-user")
    return args


# The parts of autograder/ a grading kernel imports: the test cells' helpers (the setup cell imports them), the
# grader's agent and its wire format. Nothing else of autograder/ (the grading code, its configuration) is visible.
KERNEL_MODULES = ("__init__", "checks", "agent", "wire")

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


def _project_roots() -> list[Path]:
    """Where the kernel's posenc and autograder come from: this checkout, and the folder an editable install
    of the project points at if that is another one (the kernel imports through the install's finder)."""
    roots = [ROOT]
    try:
        info = json.loads(distribution("posenc").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError, OSError):
        info = {}
    url = info.get("url", "")
    if info.get("dir_info", {}).get("editable") and url.startswith("file://"):
        roots.append(Path(url.removeprefix("file://")))
    return roots


def _readonly_paths() -> list[Path]:
    """What the kernel may read besides the system folders: Python, the virtualenv, posenc, the kernel's part of
    autograder, and the book's public data (book/data: the arena's stored results, which chapters 5, 8 and 9
    read). Not the arena's code: exercises ask for its rules, so a kernel cannot import them."""
    paths = [Path(sys.base_prefix), Path(sys.prefix), Path(sys.executable).resolve().parent.parent]
    for root in _project_roots():
        paths += [root / "posenc", root / "book" / "data"]
        paths += [root / "autograder" / f"{name}.py" for name in KERNEL_MODULES]
    out = []
    for p in paths:
        real = Path(os.path.realpath(p))
        if real.exists() and real not in out and not any(real.is_relative_to(q) for q in out if q.is_dir()):
            out.append(real)
    return out


def _symlinks() -> list[tuple[str, Path]]:
    """(target, link) for every symbolic link on the way to the paths the kernel is started through (a
    virtualenv that is itself a link, a link in a parent folder): the sandbox binds resolved paths, so these
    links are made again inside it, or the kernel's interpreter would not be found there."""
    links = []
    for path in (Path(sys.executable).absolute(), Path(sys.prefix), *_project_roots()):
        for part in [*reversed(path.parents), path]:
            if part.is_symlink() and not any(link == part for _, link in links):
                links.append((os.path.realpath(part), part))
    return links


def _mount_args(readonly: list[Path], writable: list[tuple[Path, Path]]) -> list[str]:
    """bwrap arguments that build the sandbox's file tree on an empty tmpfs: the system folders (symlinks
    recreated as symlinks), then each path read-only, then each (source, target) writable. Every parent
    folder of a mount point is made first with --dir (mode 0755: bwrap's own would be 0700, which an
    unprivileged uid could not traverse)."""
    args, made = [], {Path("/")}

    def parents(target: Path):
        for parent in reversed(target.parents):
            if parent not in made:
                args.extend(["--dir", str(parent)])
                made.add(parent)

    for name in SYSTEM:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.exists():
            args += ["--ro-bind", name, name]
        made.add(path)
    for path in readonly:
        if any(path.is_relative_to(s) for s in map(Path, SYSTEM)):
            continue
        parents(path)
        args += ["--ro-bind", str(path), str(path)]
        made.add(path)
    for source, target in writable:
        parents(target)
        args += ["--bind", str(source), str(target)]
        made.add(target)
    # (a link inside a bound folder, or behind a link made here, is already there)
    bound = [Path(n) for n in SYSTEM] + list(readonly) + [target for _, target in writable]
    for target, link in sorted(_symlinks(), key=lambda pair: len(pair[1].parts)):
        if link not in made and not any(link.is_relative_to(b) for b in bound):
            parents(link)
            args += ["--symlink", target, str(link)]
            made.add(link)
            bound.append(link)
    return args


# The largest message the grading process takes from a student's kernel. jupyter_client parses every message
# (json.loads) before nbclient looks at whom it is for, and nested JSON costs the parser about 25 times its
# size: a kernel under its 4 GiB limit could otherwise send a message that needs tens of GB in the grader (with
# --jobs 1, the process that grades the whole class). ZeroMQ refuses a larger message before anything reads
# it and drops the connection: that student's cell then times out, nobody else notices. The course's largest
# honest messages are figures and the grader's values (wire.MAX_BYTES, 16 MiB), well below.
MAX_MESSAGE_BYTES = 40 << 20


class LimitedKernelClient(AsyncKernelClient):
    """The grading process's client of a sandboxed kernel: its sockets refuse messages over MAX_MESSAGE_BYTES."""

    def _context_default(self):  # (jupyter_client's own default goes by this name)
        self._created_context = True
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)  # (a default for every socket made from it)
        return context


def _kernel_never_reads(folder, names) -> set[str]:
    """What the sandbox's copy of the working folder leaves out: notebooks (the one being graded carries the
    instructor's tests) and Jupyter's checkpoints of them."""
    return {name for name in names if name.endswith(".ipynb") or name == ".ipynb_checkpoints"}


class SandboxKernelManager(IpcKernelManager):
    """A jupyter_client kernel manager that starts the kernel inside bubblewrap (see the module docstring); its
    IPC sockets are in the sandbox's folder."""

    memory_mb = Integer(4096, help="address-space limit of each process of the kernel, in MiB").tag(config=True)
    processes = Integer(help="processes and threads the kernel may have at once (threads count: torch "
                        "starts one per core)").tag(config=True)
    file_mb = Integer(256, help="largest file the kernel may write, in MiB").tag(config=True)
    tmp_mb = Integer(256, help="size of the kernel's private /tmp, in MiB").tag(config=True)
    open_files = Integer(1024, help="open files per process").tag(config=True)
    extra_readonly = List(Unicode(), help="more paths the kernel may read").tag(config=True)

    @default("processes")
    def _processes_default(self):
        return 128 + 2 * (os.cpu_count() or 1)

    client_class = Unicode("autograder.sandbox.LimitedKernelClient")
    client_factory = Type(klass=LimitedKernelClient, help="the grader's client: refuses oversized messages")

    @property
    def kernel_spec(self):
        spec = super().kernel_spec
        if spec is not None and spec.interrupt_mode != "message":
            # bwrap does not pass SIGINT on to the kernel: interrupt with a message (ipykernel then signals
            # itself and the processes of its session).
            spec = type(spec)(**{**spec.to_dict(), "interrupt_mode": "message", "resource_dir": spec.resource_dir})
            self._kernel_spec = spec
        return spec

    async def _async_start_kernel(self, **kw):
        reason = unavailable()
        if reason:
            raise RuntimeError(f"cannot sandbox the student's kernel: {reason}")
        self._sandbox_dir = Path(tempfile.mkdtemp(prefix="posenc-sandbox-"))
        os.chmod(self._sandbox_dir, 0o711)
        ipc = self._sandbox_dir / "ipc"
        work = self._sandbox_dir / "work"
        ipc.mkdir()
        source = Path(kw.get("cwd") or os.getcwd()).resolve()
        # A copy of the working folder: nothing the cell writes (or a symlink it plants) reaches the folders
        # nbgrader reads and writes after the run. Symlinks are copied as symlinks, never followed. No notebook
        # is copied: the folder is nbgrader's autograded one, where the notebook being graded was just written
        # with every test cell restored from the gradebook, hidden tests included; the kernel is sent its
        # cells one by one and never needs the file (the student's other files are there as handed in).
        shutil.copytree(source, work, symlinks=True, ignore=_kernel_never_reads)
        self._sandbox_cwd = source
        self._sandbox_uid = None
        if os.geteuid() == 0:
            # An otherwise unused uid per kernel: RLIMIT_NPROC does not bind root, and counts per uid.
            self._sandbox_uid = 200_000 + secrets.randbelow(800_000)
            for path in [ipc, work, *work.rglob("*")]:
                os.lchown(path, self._sandbox_uid, self._sandbox_uid)
        self.connection_file = str(ipc / "kernel.json")
        self.ip = str(ipc / "k")
        # The kernel talks to the grader only over its sockets. It must not inherit the grading process's
        # stdout and stderr: a sandbox that outlives a killed grading worker would hold them open (whoever reads
        # the grader's output would wait for ever), and a student's kernel has nothing to write there.
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        await super()._async_start_kernel(**kw)
        if self._sandbox_uid is not None:
            os.chown(self.connection_file, self._sandbox_uid, self._sandbox_uid)

    start_kernel = _async_start_kernel

    def write_connection_file(self, **kwargs):
        super().write_connection_file(**kwargs)
        if getattr(self, "_sandbox_uid", None) is not None and os.path.exists(self.connection_file):
            os.chown(self.connection_file, self._sandbox_uid, self._sandbox_uid)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        return self.sandbox_argv(cmd)

    def sandbox_argv(self, cmd: list[str]) -> list[str]:
        """bwrap's command line that runs cmd (the kernel) in the sandbox."""
        args = [bwrap_path(), *_namespace_args(), "--clearenv", "--hostname", "sandbox",
                "--tmpfs", "/", "--proc", "/proc", "--dev", "/dev",
                "--size", str(self.tmp_mb << 20), "--tmpfs", "/tmp"]
        ipc = self._sandbox_dir / "ipc"
        args += _mount_args([*_readonly_paths(), *map(Path, self.extra_readonly)],
                            [(ipc, ipc), (self._sandbox_dir / "work", self._sandbox_cwd)])
        args += ["--chdir", str(self._sandbox_cwd)]
        env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
        env.update(HOME="/tmp", IPYTHONDIR="/tmp/.ipython", MPLCONFIGDIR="/tmp/.matplotlib",
                   JUPYTER_RUNTIME_DIR="/tmp/.jupyter", PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin",
                   PYTHONDONTWRITEBYTECODE="1", JPY_PARENT_PID="1")  # 1: no parent poller, no banner
        for key, value in env.items():
            args += ["--setenv", key, value]
        # A read-only root: the mount points above were made in a tmpfs, which is now remounted read-only.
        args += ["--remount-ro", "/"]
        spec = {"uid": self._sandbox_uid, "limits": {
            "RLIMIT_AS": self.memory_mb << 20, "RLIMIT_NPROC": self.processes,
            "RLIMIT_FSIZE": self.file_mb << 20, "RLIMIT_NOFILE": self.open_files, "RLIMIT_CORE": 0}}
        python = str(Path(sys.executable).absolute())
        return [*args, "--", python, "-I", "-c", _LAUNCHER, json.dumps(spec), *cmd]

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            folder = getattr(self, "_sandbox_dir", None)
            if folder is not None and not restart:
                shutil.rmtree(folder, ignore_errors=True)
                self._sandbox_dir = None

    cleanup_resources = _async_cleanup_resources


PREFLIGHT = "import ipykernel, numpy, posenc, autograder.agent, autograder.checks"


def preflight(timeout: float = 120) -> str | None:
    """Start the kernel's interpreter in the sandbox exactly as grading will (same mounts, limits and uid)
    and import what a grading kernel imports; why that fails, in one line, or None. Run once by `grade`
    before anyone is graded, so that a sandbox that cannot work (a virtualenv outside the bound paths, a
    package missing inside) is one clear message instead of every submission failing."""
    manager = SandboxKernelManager()
    manager._sandbox_dir = Path(tempfile.mkdtemp(prefix="posenc-sandbox-"))
    try:
        os.chmod(manager._sandbox_dir, 0o711)
        for name in ("ipc", "work"):
            (manager._sandbox_dir / name).mkdir()
        manager._sandbox_cwd = manager._sandbox_dir / "work"
        manager._sandbox_uid = 200_000 + secrets.randbelow(800_000) if os.geteuid() == 0 else None
        if manager._sandbox_uid is not None:
            for name in ("ipc", "work"):
                os.chown(manager._sandbox_dir / name, manager._sandbox_uid, manager._sandbox_uid)
        argv = manager.sandbox_argv([str(Path(sys.executable).absolute()), "-c", PREFLIGHT])
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the sandboxed interpreter did not start ({exc})"
        if done.returncode:
            lines = [line.strip() for line in (done.stderr or "").splitlines() if line.strip()]
            return (f"a kernel cannot start in the sandbox: {lines[-1] if lines else f'exit status {done.returncode}'}"
                    f" (interpreter {Path(sys.executable).absolute()}, virtualenv {sys.prefix})")
        return None
    finally:
        shutil.rmtree(manager._sandbox_dir, ignore_errors=True)
