"""Waiting for a local server to answer its health URL (the e2e tests' Streamlit servers, the
benchmarks' Streamlit and llama-server processes): one loop instead of a copy per caller."""
from __future__ import annotations

import time
import urllib.request
from typing import Callable


def wait_healthy(url: str, timeout_s: float, *, exited: Callable[[], bool] = lambda: False,
                 pause_s: float = 0.3) -> str:
    """Poll ``url`` until it answers 200: "ok"; "exited" as soon as ``exited()`` says the server's
    process is gone; "timeout" after ``timeout_s`` seconds. Connection errors are retried."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if exited():
            return "exited"
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return "ok"
        except OSError:
            pass
        time.sleep(pause_s)
    return "timeout"
