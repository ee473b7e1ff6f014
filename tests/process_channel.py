"""A plain Python process standing in for a student's kernel: runs a notebook's code cells, then answers
the grading process's requests (``autograder.agent``) over its standard input and output.

For checking test cells against the model solutions, and their hidden tests against many salts, without
starting a Jupyter kernel per run (``tests/test_verdict.py``, ``test_fair_draws.py``, ``test_each_case.py``).
Grading a student always goes through the real kernel in the sandbox (``autograder.preprocessors.GuardedExecute``).
The process is this file run by its path (``python tests/process_channel.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from autograder import agent
from autograder.verdict import Channel, KernelLost


def _frame(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def _read(stream) -> bytes | None:
    head = stream.read(8)
    if len(head) < 8:
        return None
    return stream.read(int.from_bytes(head, "big"))


class ProcessChannel(Channel):
    """Starts this file as a process (in ``cwd``), which runs ``sources`` (cell sources) in order."""

    def __init__(self, sources: list[str], cwd=None):
        env = {**os.environ, "MPLBACKEND": "Agg"}
        self.proc = subprocess.Popen([sys.executable, __file__], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.request(json.dumps(sources))  # the answer is "ready" or the first cell's error

    def request(self, payload: str) -> str:
        try:
            self.proc.stdin.write(_frame(payload.encode()))
            self.proc.stdin.flush()
            reply = _read(self.proc.stdout)
        except (BrokenPipeError, OSError):
            reply = None
        if reply is None:
            raise KernelLost("the notebook's process ended")
        return reply.decode()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _serve() -> None:
    sys.path[0] = os.getcwd()  # the notebook's folder, as in a kernel, instead of tests/
    stdin, stdout = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the notebook's prints go to stderr, the protocol keeps stdout
    namespace = {"__name__": "__main__"}
    for index, source in enumerate(json.loads(_read(stdin))):
        exec(compile(source, f"<cell {index}>", "exec"), namespace)
    stdout.write(_frame(b"ready"))
    stdout.flush()
    while (request := _read(stdin)) is not None:
        stdout.write(_frame(agent.reply(request.decode(), namespace).encode()))
        stdout.flush()


if __name__ == "__main__":
    _serve()
