"""A kernel on ZeroMQ IPC sockets in a private folder instead of TCP ports: jupyter_client picks free ports by
binding and releasing them, so two processes starting kernels at once could be handed the same port, and the
second kernel died before it replied; socket files cannot collide."""

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
        folder = getattr(self, "_ipc_folder", None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
