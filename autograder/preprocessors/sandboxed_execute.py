"""``SandboxedExecute``: ``GuardedExecute`` with each kernel in the bubblewrap sandbox, autograde's default
(``autograder.config`` swaps it back for ``--unsandboxed``)."""

import json

from nbformat.v4 import new_output
from traitlets import Integer

from ..sandbox import SandboxKernelManager, unavailable
from .guarded_execute import GuardedExecute


class SandboxedExecute(GuardedExecute):
    """Also bounds a cell's output while the cell runs (InertOutputs cuts it only after the notebook ran, so
    `while True: print(...)` would fill the grader's memory until the timeout): past ``max_output_chars``
    characters of output messages (their JSON) the rest is dropped, errors kept, and a note says so."""

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
        if msg["msg_type"] != "error":
            used = self._output_used.get(cell_index, 0)
            self._output_used[cell_index] = used + len(json.dumps(msg["content"], ensure_ascii=False))
            if self._output_used[cell_index] > self.max_output_chars:
                if used <= self.max_output_chars:
                    text = msg["content"].get("text")
                    if msg["msg_type"] == "stream" and isinstance(text, str):  # (what fits of it is kept)
                        super().output(outs, {**msg, "content": {**msg["content"], "text": text[:max(
                            0, self.max_output_chars - used)]}}, display_id, cell_index)
                    outs.append(new_output("stream", name="stderr", text=(
                        f"\n... Output truncated while the cell ran (more than {self.max_output_chars} "
                        "characters): the rest was not kept ...\n")))
                return None
        return super().output(outs, msg, display_id, cell_index)
