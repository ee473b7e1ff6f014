"""The grading process's channel to the student's kernel while nbgrader executes it (``autograder.verdict``).

Each request is one message on the comm the grader's agent opens in the kernel (``autograder.agent``): no
cell runs, so the notebook's input transformers, ``pre_run_cell``/``post_run_cell`` callbacks and display hook
are not involved and the execution count does not move. The reply is the first message the kernel sends on
the comm while handling that request.
All requests of one test cell share one deadline (the cell timeout); past it the kernel is interrupted, and
a kernel that does not come back, or dies, is reported as ``KernelLost``.
"""

from __future__ import annotations

import json
import queue
import time
import uuid

from jupyter_core.utils import ensure_async, run_sync

from .agent import TARGET
from .verdict import Channel, ChannelFailure, KernelLost

MAX_MESSAGE_BYTES = 256 << 20  # everything one request may send back before the grader stops reading
INTERRUPT_GRACE = 10.0  # seconds a kernel gets to come back after the interrupt sent at the deadline


def message_size(content: dict) -> int:
    """Characters an output message costs: its text, and every value of its data and metadata, whatever
    their type (a JSON payload is not a string, and counts all the same)."""
    size = len(content.get("text", "") or "") if isinstance(content.get("text", ""), str) else 0
    for part in (content.get("data"), content.get("metadata"), content.get("transient")):
        for value in (part or {}).values() if isinstance(part, dict) else ():
            size += len(value) if isinstance(value, str) else len(json.dumps(value, default=str))
    return size


class KernelChannel(Channel):
    """Requests to the kernel of a running nbclient ``client`` (nbgrader's Execute step), as messages on the
    agent's comm (``agent.TARGET``, opened on the first request). One channel per kernel: it keeps the comm and
    the large arguments the kernel has stored; ``begin`` starts each test cell's deadline."""

    def __init__(self, client):
        self.client, self.comm_id, self.stored = client, None, {}
        self.begin(0.0)  # (each test cell starts its own deadline)

    def begin(self, seconds: float) -> None:
        """A new test cell: its calls share one deadline, ``seconds`` from now."""
        self.deadline, self.seconds, self.failed = time.monotonic() + seconds, seconds, None

    def request(self, payload: str) -> str:
        if self.failed is not None:  # one timeout or flood ends the cell's calls
            raise self.failed
        try:
            return run_sync(self._request)(payload)
        except ChannelFailure as exc:
            self.failed = exc
            raise

    def _send(self, msg_type: str, content: dict) -> str:
        kc = self.client.kc
        msg = kc.session.msg(msg_type, content)
        kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    async def _request(self, payload: str) -> str:
        if self.comm_id is None:  # one comm per kernel, opened by the first request
            self.comm_id = uuid.uuid4().hex
            await self._wait(self._send("comm_open", {"comm_id": self.comm_id, "target_name": TARGET, "data": {}}))
        reply = await self._wait(self._send("comm_msg", {"comm_id": self.comm_id, "data": {"request": payload}}))
        if reply is None:
            raise ChannelFailure("the notebook's kernel did not answer the grader's call: code in the notebook "
                                 "changed or blocked the grader's agent")
        return reply

    async def _wait(self, msg_id: str) -> str | None:
        """The reply the kernel sends on the comm for request ``msg_id`` (None if it goes idle without one)."""
        kc = self.client.kc
        reply, used = None, 0
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                await self._interrupt(msg_id)
                raise ChannelFailure(f"the notebook's code did not return within {self.seconds:g} s (the time "
                                     "one test cell gets)")
            try:
                msg = await ensure_async(kc.get_iopub_msg(timeout=min(remaining, 2.0)))
            except queue.Empty:
                if not await ensure_async(self.client.km.is_alive()):
                    raise KernelLost("the kernel died while the tests called the notebook's code") from None
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            used += message_size(msg.get("content", {}))
            if used > MAX_MESSAGE_BYTES:
                await self._interrupt(msg_id)
                raise ChannelFailure(f"the notebook's code sent more than {MAX_MESSAGE_BYTES >> 20} MB of output")
            kind, content = msg.get("msg_type"), msg.get("content", {})
            if kind == "status" and content.get("execution_state") == "idle":
                return reply
            if kind == "comm_msg" and reply is None and isinstance(content.get("data", {}).get("reply"), str):
                reply = content["data"]["reply"]

    async def _interrupt(self, msg_id: str) -> None:
        """Interrupt the kernel and wait for it to finish the request; KernelLost if it does not."""
        kc, km = self.client.kc, self.client.km
        try:
            await ensure_async(km.interrupt_kernel())
        except Exception as exc:  # a kernel that cannot be interrupted is as good as lost
            raise KernelLost(f"the kernel could not be interrupted ({exc})") from None
        end = time.monotonic() + INTERRUPT_GRACE
        while time.monotonic() < end:
            try:
                msg = await ensure_async(kc.get_iopub_msg(timeout=1.0))
            except queue.Empty:
                continue
            if (msg.get("parent_header", {}).get("msg_id") == msg_id and msg.get("msg_type") == "status"
                    and msg.get("content", {}).get("execution_state") == "idle"):
                return
        raise KernelLost(f"the kernel ignored the interrupt sent after {self.seconds:g} s")
