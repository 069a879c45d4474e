"""Run an index build with live progress on the page.

``kgviz.index.pipeline.build`` calls its progress callback from worker threads, and Streamlit
elements may only be touched from the script thread. So the build runs in a background thread,
events go through a queue, and the script thread drains the queue into one ``st.progress`` per
stage inside an ``st.status`` box.

If the script is stopped while building (the user presses Stop, switches page, or a widget
triggers a rerun) the ``finally`` sets the cancel event and waits for the build to stop at a safe
point; what was written is kept and a re-run resumes (the pipeline's contract).

Builds of one workspace run one at a time (``GraphStore.build_lock``); a session whose build
waits for another session's sees "waiting for the other build …" as the status label and as a
``wait`` progress bar until the other build finishes.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Sequence

import streamlit as st

from kgviz.graph.store import GraphStore
from kgviz.index.params import WAIT_STAGE, BuildParams, BuildReport, ProgressEvent
from kgviz.reasoning import Reasoner
from kgviz.types import Document, Usage

_POLL_S = 0.15


def _fmt_usage(u: Usage | None) -> str:
    if u is None or (u.calls == 0 and u.total_tokens == 0):
        return ""
    return f" · {u.calls} calls, {u.total_tokens:,} tokens, ${u.cost_usd:.4f}"


def run_build(documents: Sequence[Document], store: GraphStore, reasoner: Reasoner, params: BuildParams, *,
              label: str = "Building the graph") -> BuildReport:
    """Build with progress; returns the BuildReport, re-raises the build's error."""
    from kgviz.index.pipeline import build  # lazy: keeps page imports light

    events: queue.Queue[ProgressEvent] = queue.Queue()
    cancel = threading.Event()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["report"] = build(list(documents), store, reasoner, params, progress=events.put, cancel=cancel)
        except BaseException as exc:  # noqa: BLE001 - handed to the script thread and re-raised there
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="kgviz-build", daemon=True)
    with st.status(f"{label} ({len(documents)} documents)…", expanded=True) as box:
        bars: dict[str, Any] = {}
        t0 = time.perf_counter()
        worker.start()
        try:
            while worker.is_alive() or not events.empty():
                latest: dict[str, ProgressEvent] = {}
                try:
                    while True:
                        ev = events.get_nowait()
                        latest[ev.stage] = ev
                except queue.Empty:
                    pass
                for stage, ev in latest.items():
                    if stage == WAIT_STAGE:  # another session is building this workspace
                        box.update(label=f"{label}: {ev.message}…" if ev.done < ev.total
                                   else f"{label} ({len(documents)} documents)…", state="running")
                    text = f"{stage}: {ev.done}/{ev.total}" + (f" — {ev.message}" if ev.message else "")
                    text += _fmt_usage(ev.usage_so_far)
                    if stage not in bars:
                        bars[stage] = st.progress(ev.fraction, text=text)
                    else:
                        bars[stage].progress(ev.fraction, text=text)
                worker.join(timeout=_POLL_S)
        finally:
            if worker.is_alive():
                cancel.set()
                worker.join()
        if "error" in outcome:
            box.update(label=f"{label}: failed", state="error", expanded=True)
            raise outcome["error"]
        report = outcome["report"]
        failed = len(report.failures)
        if failed:  # a build with failed chunks is not a success: say so in the status line itself
            box.update(label=f"{label}: built with {failed} failed chunk(s) in {time.perf_counter() - t0:.1f} s",
                       state="error", expanded=False)
        else:
            box.update(label=f"{label}: done in {time.perf_counter() - t0:.1f} s", state="complete", expanded=False)
    return report
