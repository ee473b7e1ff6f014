"""A kernel on ZeroMQ IPC sockets in a private folder instead of TCP ports, which jupyter_client picks by binding
and releasing them: two kernels started at once could get the same port, and one died; socket files cannot collide."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import default


class IpcKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose sockets are ``<private folder>/k-<n>``, the folder removed with the kernel."""

    @default("transport")
    def _transport_default(self):
        return "ipc"

    @default("ip")
    def _ip_default(self):  # (for IPC, jupyter_client's "ip" is the sockets' path without "-<n>")
        self._ipc_folder = Path(tempfile.mkdtemp(prefix="posenc-kernel-"))
        return str(self._ipc_folder / "k")

    def cleanup_ipc_files(self) -> None:
        super().cleanup_ipc_files()
        if getattr(self, "_ipc_folder", None):
            shutil.rmtree(self._ipc_folder, ignore_errors=True)
