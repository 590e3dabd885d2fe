"""Servers the tests start (JupyterLab, JupyterHub): a free port, and ending them cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess


def free_port() -> int:
    """A port nothing listens on now (the system's choice); pass it with NO_PORT_RETRIES."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A Jupyter server whose port was taken in the meantime moves to the next free one by default,
# and a test would then talk to whatever else listens on the port it asked for: refuse instead
# (the server exits, and the test says so or starts it again on another free port).
NO_PORT_RETRIES = "--ServerApp.port_retries=0"


def stop_group(process: subprocess.Popen) -> None:
    """End a server started with start_new_session=True, and everything it started."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
