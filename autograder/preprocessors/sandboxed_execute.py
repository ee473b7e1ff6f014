"""``SandboxedExecute``: ``GuardedExecute`` with each kernel started in the bubblewrap sandbox
(``autograder.sandbox.SandboxKernelManager``); autograde's default (``autograder.config`` swaps it back for
``--unsandboxed``)."""

from __future__ import annotations

import json

from nbformat.v4 import new_output
from traitlets import Integer

from ..sandbox import SandboxKernelManager, unavailable
from .guarded_execute import GuardedExecute


def message_size(content: dict) -> int:
    """Characters an output message costs: its text, and every value of its data and metadata, whatever their
    type (a JSON payload counts as its JSON text)."""
    size = len(content["text"]) if isinstance(content.get("text"), str) else 0
    for part in (content.get("data"), content.get("metadata"), content.get("transient")):
        for value in part.values() if isinstance(part, dict) else ():
            size += len(value) if isinstance(value, str) else len(json.dumps(value, default=str))
    return size


class SandboxedExecute(GuardedExecute):
    """Also bounds a cell's output while the cell runs (nbgrader's LimitOutput cuts it only after the notebook
    ran, so `while True: print(...)` would fill the grader's memory until the timeout): past
    ``max_output_chars`` characters the rest is dropped, errors kept, and a note says so."""

    max_output_chars = Integer(2_000_000, help="characters of output kept per cell while it runs").tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources=None, km=None):
        if reason := unavailable():
            raise RuntimeError(f"refusing to run this submission unsandboxed: {reason}. "
                               "`python -m autograder grade --unsandboxed` runs it anyway (see its warning).")
        self._output_used = {}
        return super().preprocess(nb, resources, km)

    def handle_comm_msg(self, outs, msg, cell_index):
        return None  # nbclient would keep every widget message for a widget state that InertOutputs drops

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        if msg.get("msg_type") != "error":
            size = message_size(content)
            used = self._output_used.get(cell_index, 0)
            self._output_used[cell_index] = used + size
            if used + size > self.max_output_chars:
                room = self.max_output_chars - used
                if room > 0 and msg.get("msg_type") == "stream":  # keep what fits of the first one over
                    super().output(outs, {**msg, "content": {**content, "text": content["text"][:room]}},
                                   display_id, cell_index)
                if used <= self.max_output_chars:
                    outs.append(new_output("stream", name="stderr", text=(
                        f"\n... Output truncated while the cell ran (more than {self.max_output_chars} "
                        "characters): the rest was not kept ...\n")))
                return None
        return super().output(outs, msg, display_id, cell_index)
