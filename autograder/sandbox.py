"""The kernel manager that starts each student's kernel inside bubblewrap, and bwrap's arguments. What the
sandbox lets the kernel read, write and use is in autograder/README.md ("The sandbox")."""

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
from traitlets import Type

from .course import ROOT
from .ipc_kernel import IpcKernelManager

UNSANDBOXED_WARNING = (
    "WARNING: --unsandboxed: students' code runs with YOUR privileges while it is graded. A submission can "
    "read the instructor's solutions (solutions/, the gradebook's copy of the source notebooks) and so score "
    "full marks, rewrite or delete every student's grades in the gradebook, read other students' "
    "submissions and your home folder, use the network, and exhaust the machine's memory and processes. "
    "Only grade submissions you trust this way.")

# Variables passed into the sandbox (everything else is cleared: a grader's tokens stay outside).
PASS_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
            "PYTHONHASHSEED")

# The parts of autograder/ a grading kernel imports; nothing else of autograder/ is visible in the sandbox.
KERNEL_MODULES = ("__init__", "checks", "agent", "wire")

PYTHON = str(Path(sys.executable).absolute())  # (the interpreter as started: through its links)
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")

# Not root: a user namespace lets bwrap mount without privileges, and gives the kernel a process count of its own
# (RLIMIT_NPROC then counts only the sandbox's processes).
NAMESPACES = (*([] if os.geteuid() == 0 else ["--unshare-user"]), "--unshare-pid", "--unshare-net", "--unshare-ipc",
              "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session")

# util-linux's prlimit, per process: 4 GiB of address space, 256 MiB per file; processes and threads at once
# (torch starts a thread per core).
LIMITS = ("prlimit", f"--as={4 << 30}", f"--nproc={128 + 2 * (os.cpu_count() or 1)}", f"--fsize={256 << 20}",
          "--nofile=1024", "--core=0", "--")

# The largest message the grading process takes from a kernel (why: autograder/README.md, grade's step 4); the
# course's largest honest messages are figures and the grader's values (wire.MAX_BYTES), well below.
MAX_MESSAGE_BYTES = 40 << 20


@functools.cache
def unavailable() -> str | None:
    """Why the sandbox cannot be used on this machine, in words; None when it can (probed once per process: a bwrap
    run costs about 10 ms, and every graded notebook's kernel asks)."""
    exe = shutil.which("bwrap") if sys.platform.startswith("linux") else None
    if exe is None:
        return ("bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: `sudo apt-get install bubblewrap`; "
                "Fedora: `sudo dnf install bubblewrap`), or grade on a Linux machine that has it")
    probe = [exe, *NAMESPACES, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        result = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:  # (a bwrap for another machine, a hung one)
        return f"bwrap could not be run ({exc}); install bubblewrap for this machine or grade on one that has it"
    if result.returncode:
        return (f"bwrap is installed but cannot create a sandbox here ({result.stderr.strip() or result.returncode});"
                " unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1, or an "
                "AppArmor profile for bwrap on Ubuntu 24.04)")
    return None


def _mount_args(writable: list[tuple[Path, Path]]) -> list[str]:
    """bwrap's file tree on an empty tmpfs: the system folders; read-only and resolved, Python, the virtualenv,
    posenc, book/data, the kernel's modules; each (source, target) writable; the links on the way to the interpreter
    and the checkout. Mount points' parents are made by --dir, mode 0755: the kernel's uid can traverse them."""
    try:  # an editable install of posenc from another folder than this checkout: the kernel imports from there
        origin = json.loads(distribution("posenc").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        origin = {}
    url = origin.get("url", "") if origin.get("dir_info", {}).get("editable") else ""
    roots = [ROOT, Path(url.removeprefix("file://"))] if url.startswith("file://") else [ROOT]
    paths = [Path(sys.base_prefix), Path(sys.prefix), Path(sys.executable).resolve().parent.parent]
    for root in roots:
        paths += [root / "posenc", root / "book" / "data", *(root / "autograder" / f"{m}.py" for m in KERNEL_MODULES)]
    readonly = [real for real in dict.fromkeys(map(Path, map(os.path.realpath, paths))) if real.exists()]
    args = []
    for name in SYSTEM:
        args += ["--symlink", os.readlink(name), name] if os.path.islink(name) else ["--ro-bind-try", name, name]
    for path in readonly:
        args += ["--dir", str(path.parent), "--ro-bind", str(path), str(path)]
    for source, target in writable:
        args += ["--dir", str(target.parent), "--bind", str(source), str(target)]
    bound = [*map(Path, SYSTEM), *readonly, *(target for _, target in writable)]
    for path in (Path(PYTHON), Path(sys.prefix), *roots):
        for link in [*reversed(path.parents), path]:  # (a link inside a bound folder or a made link is there)
            if link.is_symlink() and not any(link.is_relative_to(b) for b in bound):
                args += ["--dir", str(link.parent), "--symlink", os.path.realpath(link), str(link)]
                bound.append(link)
    return args


class LimitedKernelClient(AsyncKernelClient):
    """The grading process's client of a sandboxed kernel: its sockets refuse messages over MAX_MESSAGE_BYTES."""

    def _context_default(self):  # (jupyter_client's own default goes by this name)
        self._created_context = True
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)  # (a default for every socket made from it)
        return context


class SandboxKernelManager(IpcKernelManager):
    """A jupyter_client kernel manager that starts the kernel inside bubblewrap, its IPC sockets in the
    sandbox's folder (removed with the kernel, as IpcKernelManager's)."""

    client_factory = Type(LimitedKernelClient)

    def make_sandbox(self, source: Path) -> None:
        """The sandbox's private folder: ipc/ for the sockets, and work/, mounted at ``source``: a copy of it
        (symlinks as symlinks) without its notebooks. As root, both belong to an otherwise unused uid per
        kernel: RLIMIT_NPROC does not bind root, and counts per uid."""
        self._ipc_folder = Path(tempfile.mkdtemp(prefix="posenc-sandbox-"))
        os.chmod(self._ipc_folder, 0o711)
        ipc, work = self._ipc_folder / "ipc", self._ipc_folder / "work"
        ipc.mkdir()
        shutil.copytree(source, work, symlinks=True, ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"))
        self._sandbox_cwd = source
        self._sandbox_uid = 200_000 + secrets.randbelow(800_000) if os.geteuid() == 0 else None
        if self._sandbox_uid is not None:
            for path in [ipc, work, *work.rglob("*")]:
                os.lchown(path, self._sandbox_uid, self._sandbox_uid)

    async def _async_start_kernel(self, **kw):
        self.make_sandbox(Path(kw.get("cwd") or os.getcwd()).resolve())
        self.kernel_spec.interrupt_mode = "message"  # (bwrap passes no SIGINT on; a new KernelSpec per manager)
        self.connection_file = str(self._ipc_folder / "ipc" / "kernel.json")
        self.ip = str(self._ipc_folder / "ipc" / "k")
        # Not the grading process's stdout and stderr: a sandbox that outlives a killed grading worker would hold
        # them open, and whoever reads the grader's output would wait for ever. bwrap, prlimit, setpriv keep umask.
        await super()._async_start_kernel(**{"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
                                             "umask": 0o077, **kw})

    start_kernel = _async_start_kernel

    def write_connection_file(self, **kwargs):
        super().write_connection_file(**kwargs)
        if self._sandbox_uid is not None:
            os.chown(self.connection_file, self._sandbox_uid, self._sandbox_uid)

    def format_kernel_cmd(self, extra_arguments=None):
        return self.sandbox_argv(super().format_kernel_cmd(extra_arguments))

    def sandbox_argv(self, cmd: list[str]) -> list[str]:
        """bwrap's command line that runs cmd (the kernel) in the sandbox: rlimits, then as root the unused uid."""
        args = [shutil.which("bwrap"), *NAMESPACES, "--clearenv", "--hostname", "sandbox", "--tmpfs", "/",
                "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(256 << 20), "--tmpfs", "/tmp"]
        ipc = self._ipc_folder / "ipc"
        args += [*_mount_args([(ipc, ipc), (self._ipc_folder / "work", self._sandbox_cwd)]), "--chdir",
                 str(self._sandbox_cwd)]
        env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
        env.update(HOME="/tmp", PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin", PYTHONDONTWRITEBYTECODE="1",
                   JPY_PARENT_PID="1")  # 1: no parent poller, no banner
        for key, value in env.items():
            args += ["--setenv", key, value]
        args += ["--remount-ro", "/", "--", *LIMITS]  # (--remount-ro: the tmpfs the mount points were made in)
        uid = self._sandbox_uid
        drop = [] if uid is None else ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
        return [*args, *drop, *cmd]


PREFLIGHT = "import ipykernel, numpy, posenc, autograder.agent, autograder.checks"


def preflight(timeout: float = 120) -> str | None:
    """Start the kernel's interpreter in the sandbox exactly as grading will and import what a grading kernel
    imports; why that fails, in one line, or None. `grade` runs it before anyone is graded."""
    manager = SandboxKernelManager()
    with tempfile.TemporaryDirectory() as empty:
        manager.make_sandbox(Path(empty))
        try:
            done = subprocess.run(manager.sandbox_argv([PYTHON, "-c", PREFLIGHT]), capture_output=True, text=True,
                                  timeout=timeout, umask=0o077)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the sandboxed interpreter did not start ({exc})"
        finally:
            shutil.rmtree(manager._ipc_folder, ignore_errors=True)
    if done.returncode:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1].strip()
        return f"a kernel cannot start in the sandbox: {why} (interpreter {PYTHON}, virtualenv {sys.prefix})"
    return None
