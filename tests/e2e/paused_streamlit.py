"""`python -m tests.e2e.paused_streamlit run app.py …`: the e2e server with deliberate pauses.

Some browser tests need the app to be slow on purpose: a build still running when the user leaves
the page, a comparison with some cards drawn and others still running. On a quick machine the
sample's build and the offline methods finish in about a second, so whether the browser sees those
moments would depend on the load. ``KGVIZ_E2E_PAUSES`` names the pauses, comma-separated:

- ``stage:NAME=S`` — a build waits S seconds before entering stage NAME (a cancel ends the wait
  early, as a slow stage that checks for cancels would; the stage's own cancel check then stops it);
- ``method:NAME=S`` — the method NAME takes S seconds longer in a comparison.

Then it runs streamlit's own command line. Only tests start this module; the app never reads
the variable.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import AbstractContextManager
from typing import Any, Callable

PAUSES_ENV = "KGVIZ_E2E_PAUSES"


def parse_pauses(spec: str) -> dict[tuple[str, str], float]:
    """``"stage:knn=8,method:no-retrieval=4"`` → {("stage", "knn"): 8.0, ("method", "no-retrieval"): 4.0}."""
    pauses: dict[tuple[str, str], float] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        kind_name, _, seconds = part.partition("=")
        kind, _, name = kind_name.partition(":")
        if kind not in ("stage", "method") or not name or not seconds:
            raise ValueError(f"{PAUSES_ENV}: cannot read {part!r} (want stage:NAME=S or method:NAME=S)")
        pauses[(kind, name)] = float(seconds)
    return pauses


def install(pauses: dict[tuple[str, str], float]) -> None:
    """Wrap the build's stage entry and the comparison's method runner with the pauses."""
    from kgviz import compare
    from kgviz.index import pipeline

    stages = {name: s for (kind, name), s in pauses.items() if kind == "stage"}
    methods = {name: s for (kind, name), s in pauses.items() if kind == "method"}
    if stages:
        entered: Callable[..., AbstractContextManager[None]] = pipeline._Run.stage

        def stage(self: Any, name: str) -> AbstractContextManager[None]:
            wait = stages.get(name, 0.0)
            cancel: threading.Event | None = self._cancel
            if wait and cancel is not None:
                cancel.wait(wait)
            elif wait:
                time.sleep(wait)
            return entered(self, name)

        pipeline._Run.stage = stage  # type: ignore[method-assign]
    if methods:
        run_method = compare.run_method

        def paused_run_method(name: str, *args: Any, **kwargs: Any) -> Any:
            time.sleep(methods.get(name, 0.0))
            return run_method(name, *args, **kwargs)

        compare.run_method = paused_run_method  # type: ignore[assignment]


if __name__ == "__main__":
    install(parse_pauses(os.environ.get(PAUSES_ENV, "")))
    from streamlit.web.cli import main

    sys.exit(main(prog_name="streamlit"))
