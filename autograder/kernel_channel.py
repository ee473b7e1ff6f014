"""The grading process's requests to the student's kernel, one message each on the agent's comm (``agent.TARGET``)."""

from __future__ import annotations

import queue
import time
import uuid

from jupyter_core.utils import ensure_async, run_sync

from .agent import TARGET
from .verdict import Channel, ChannelFailure, KernelLost

INTERRUPT_GRACE = 10.0  # seconds a kernel gets to come back after the interrupt sent at the deadline


class KernelChannel(Channel):
    """Requests to the kernel of a running nbclient ``client`` on one comm, opened here (one channel per kernel: it
    mirrors the arguments the kernel keeps). After ``begin``, a test cell's requests share one deadline."""

    def __init__(self, client):
        self.client, self.comm_id = client, uuid.uuid4().hex
        self._send("comm_open", {"target_name": TARGET, "data": {}})

    def begin(self, seconds: float) -> None:
        self.deadline, self.seconds = time.monotonic() + seconds, seconds

    def _send(self, msg_type: str, content: dict) -> str:
        msg = self.client.kc.session.msg(msg_type, {"comm_id": self.comm_id, **content})
        self.client.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def request(self, payload: str) -> str:
        return run_sync(self._reply)(self._send("comm_msg", {"data": {"request": payload}}))

    async def _reply(self, msg_id: str) -> str:
        """The kernel's reply to request ``msg_id`` (ChannelFailure: idle without one). Past the deadline the kernel
        is interrupted and the request fails; a kernel still busy INTERRUPT_GRACE s later, or dead, is KernelLost."""
        reply, late = None, False
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                if late:
                    raise KernelLost(f"the kernel ignored the interrupt sent after {self.seconds:g} s")
                try:
                    await ensure_async(self.client.km.interrupt_kernel())
                except Exception as exc:  # a kernel that cannot be interrupted is as good as lost
                    raise KernelLost(f"the kernel could not be interrupted ({exc})") from None
                self.deadline, late = time.monotonic() + INTERRUPT_GRACE, True
                continue
            try:
                msg = await ensure_async(self.client.kc.get_iopub_msg(timeout=min(remaining, 2.0)))
            except queue.Empty:
                if not await ensure_async(self.client.km.is_alive()):
                    raise KernelLost("the kernel died while the tests called the notebook's code") from None
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg.get("msg_type"), msg.get("content", {})
            if kind == "comm_msg" and reply is None and isinstance(content.get("data", {}).get("reply"), str):
                reply = content["data"]["reply"]
            if kind != "status" or content.get("execution_state") != "idle":
                continue
            if late:
                raise ChannelFailure(f"the notebook's code did not return within {self.seconds:g} s (the time one "
                                     "test cell gets)")
            if reply is None:
                raise ChannelFailure("the notebook's kernel did not answer the grader's call: code in the notebook "
                                     "changed or blocked the grader's agent")
            return reply
