"""``IpcKernelManager``: a kernel that talks to the process running it over ZeroMQ IPC sockets (files in a
folder of its own) instead of TCP ports.

jupyter_client picks a kernel's five TCP ports by binding each to port 0 and letting it go again, so two
processes starting kernels at the same moment (two grading workers, or grading beside anything else that starts
kernels) can be handed the same port; the second kernel then cannot bind it and dies before it replies to
``kernel_info``, and its notebook is lost. Socket files in a private folder cannot collide. The sandbox's
``SandboxKernelManager`` (autograder/sandbox.py) is one, its sockets in the sandbox's folder."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import default


class IpcKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose sockets are ``<private folder>/k-<n>`` (removed with the kernel)."""

    @default("transport")
    def _transport_default(self):
        return "ipc"

    @default("ip")
    def _ip_default(self):  # (for IPC, jupyter_client's "ip" is the sockets' path without "-<n>")
        self._ipc_folder = Path(tempfile.mkdtemp(prefix="posenc-kernel-"))
        return str(self._ipc_folder / "k")

    def cleanup_ipc_files(self) -> None:
        super().cleanup_ipc_files()
        folder = getattr(self, "_ipc_folder", None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
