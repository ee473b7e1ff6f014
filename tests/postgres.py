"""A throwaway PostgreSQL server for the tests and the grading benchmark: Debian's `postgresql` package (installed by
tools/system_deps.sh), a cluster made by initdb in a temporary folder, listening on 127.0.0.1 only (no Unix socket)
on a free port, stopped and deleted afterwards. Not a mock: the real server, which the gradebook reaches over TCP
with a password, as it would on another host.

PostgreSQL refuses to run as root (the CI's user here): then the cluster belongs to the unprivileged system user
Debian's package creates (`postgres`, or `nobody` where there is none), and the server runs as that user.

    with postgres.Server.started() as pg:
        url = pg.create_database("posenc")       # postgresql+psycopg2://grader:<password>@127.0.0.1:<port>/posenc
        pg.stop(); pg.start()                     # a fast shutdown, then the same cluster again
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

USER = "grader"  # the role the gradebook connects as: owns its databases, not a superuser
SUPERUSER = "postgres"


def bindir() -> Path | None:
    """The folder of the server's programs (initdb, postgres): on PATH (most distributions), or the newest of
    Debian's /usr/lib/postgresql/<version>/bin (Debian puts only the client programs on PATH)."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    numbers = [(tuple(int(x) for x in re.findall(r"\d+", p.parent.name)), p) for p in versions]
    return max(numbers)[1] if numbers else None


def missing() -> str | None:
    """Why no server can be started here, or None."""
    if bindir() is None:
        return ("PostgreSQL's server programs (initdb, postgres) are not installed: Debian/Ubuntu: "
                "sudo apt-get install postgresql (make test installs it: tools/system_deps.sh)")
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _owner() -> pwd.struct_passwd | None:
    """The unprivileged user the server runs as when we are root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("PostgreSQL refuses to run as root and this machine has neither a 'postgres' nor a "
                       "'nobody' user to run it as")


class Server:
    """One PostgreSQL cluster in ``folder`` (created by initdb), started and stopped on demand."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.data = self.folder / "data"
        self.log = self.folder / "postgres.log"
        self.port = _free_port()
        self.password = secrets.token_hex(12)  # the grader role's (and the superuser's, for setup)
        self.proc: subprocess.Popen | None = None
        self.owner = _owner()
        self.bin = bindir()
        if self.bin is None:
            raise RuntimeError(missing())

    # ----------------------------------------------------------------------------------------------------
    def _as_owner(self) -> dict:
        if self.owner is None:
            return {}
        return {"user": self.owner.pw_uid, "group": self.owner.pw_gid, "extra_groups": []}

    def _env(self) -> dict:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C",
                "HOME": str(self.folder)}

    def init(self) -> None:
        """initdb: a cluster that accepts only password logins (scram-sha-256) over TCP."""
        self.folder.mkdir(parents=True, exist_ok=True)
        pwfile = self.folder / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.owner is not None:
            for path in (self.folder, pwfile):
                os.chown(path, self.owner.pw_uid, self.owner.pw_gid)
        done = subprocess.run([str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER,
                               f"--pwfile={pwfile}", "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C",
                               "--no-sync"],
                              env=self._env(), cwd=self.folder, capture_output=True, text=True, **self._as_owner())
        pwfile.unlink()
        if done.returncode:
            raise RuntimeError(f"initdb failed ({done.returncode}):\n{done.stdout}{done.stderr}")

    def start(self, timeout: float = 60) -> None:
        """Start the server on the cluster (again, after ``stop``) and wait until it accepts logins."""
        log = open(self.log, "a")
        if self.owner is not None:
            os.chown(self.log, self.owner.pw_uid, self.owner.pw_gid)
        self.proc = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=100"],
            env=self._env(), cwd=self.folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            **self._as_owner())
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}")
            try:
                self._connect("postgres").close()
                return
            except Exception:  # noqa: BLE001 (psycopg2.OperationalError while it starts up)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not accept logins in {timeout} s:\n{self.log_text()[-3000:]}")
                time.sleep(0.2)

    def stop(self, timeout: float = 60) -> None:
        """PostgreSQL's fast shutdown (SIGINT): open sessions are ended, their open transactions rolled back,
        what was committed is kept."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGQUIT)  # immediate shutdown
            self.proc.wait(timeout=timeout)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    # ----------------------------------------------------------------------------------------------------
    def _connect(self, database: str, user: str = SUPERUSER):
        import psycopg2

        con = psycopg2.connect(host="127.0.0.1", port=self.port, user=user, password=self.password,
                               dbname=database, connect_timeout=5)
        con.autocommit = True
        return con

    def url(self, database: str, user: str = USER, password: str | None = None) -> str:
        """The SQLAlchemy URL of a database on this server (the gradebook's db_url)."""
        return (f"postgresql+psycopg2://{user}:{self.password if password is None else password}"
                f"@127.0.0.1:{self.port}/{database}")

    def create_database(self, database: str) -> str:
        """A new empty database owned by the (non-superuser) grader role; returns its URL."""
        con = self._connect("postgres")
        try:
            with con.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (USER,))
                if cur.fetchone() is None:
                    cur.execute(f'CREATE ROLE "{USER}" LOGIN PASSWORD %s', (self.password,))
                cur.execute(f'CREATE DATABASE "{database}" OWNER "{USER}"')
        finally:
            con.close()
        return self.url(database)

    def query(self, database: str, sql: str, args=()) -> list[tuple]:
        """Rows of one SQL query on ``database`` (as the superuser: the tests' look behind nbgrader's back)."""
        con = self._connect(database)
        try:
            with con.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall()
        finally:
            con.close()

    @classmethod
    @contextlib.contextmanager
    def started(cls):
        """A new cluster in a new folder of the system's temporary folder (which the server's user can reach,
        unlike pytest's, private to root), started; stopped and deleted after."""
        tmp = Path(tempfile.mkdtemp(prefix="posenc-postgres-"))
        server = cls(tmp)
        try:
            server.init()
            server.start()
            yield server
        finally:
            server.stop()
            shutil.rmtree(tmp, ignore_errors=True)
