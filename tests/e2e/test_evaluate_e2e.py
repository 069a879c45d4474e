"""Evaluate end to end in a real browser: `streamlit run app.py` (temp KGVIZ_HOME, offline), Debian
chromium via Playwright. Load the sample, open Evaluate, run a small evaluation (3 methods + the
bm25 / dense baselines x 3 questions) and see the results table and the plotly charts drawn;
nothing is fetched from outside.

Needs /usr/bin/chromium; skipped otherwise, unless KGVIZ_REQUIRE_BROWSER=1. Server, browser, page
and helpers: tests/e2e/conftest.py (never runs `playwright install`).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from kgviz.methods.registry import list_methods

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.e2e
EVAL_S = 180


def _remove_methods(page: Page, names: list[str]) -> None:
    """Remove methods from the multiselect, one rerun at a time. On a loaded machine a removal
    clicked while the previous rerun is still running can come back (Streamlit re-sends the
    widget's kept value), so the loop waits for each removal to settle and checks them all again."""
    from playwright.sync_api import expect

    expect(page.get_by_role("button", name=f"Remove {names[0]}", exact=True)).to_be_visible(timeout=30_000)
    idle = "!document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]')"
    for _ in range(6):
        left = [n for n in names if page.get_by_role("button", name=f"Remove {n}", exact=True).count()]
        if not left:
            return
        for name in left:
            page.wait_for_function(idle, timeout=30_000)  # click only between reruns
            remove = page.get_by_role("button", name=f"Remove {name}", exact=True)
            if remove.count():
                remove.click()
                page.wait_for_timeout(300)  # let the rerun this removal starts begin
                page.wait_for_function(idle, timeout=30_000)
                # a removal that came back (a rerun re-sent the kept value) is retried in the next pass
    raise AssertionError(f"methods still selected after six passes: {left}")


def test_small_evaluation_shows_charts(
    server: str, page: Page, outside: list[str], tmp_path: Path,
    load_sample: Callable[..., None], save_screenshot: Callable[[Page, Path, str], Path],
) -> None:
    from playwright.sync_api import expect

    page.goto(server)
    expect(page.get_by_role("heading", name="kgviz", level=1)).to_be_visible(timeout=30_000)
    load_sample(page)

    page.get_by_role("link", name="Evaluate").click()
    expect(page.get_by_role("heading", name="Evaluate methods")).to_be_visible(timeout=30_000)
    # keep three methods: remove the others from the multiselect
    keep = {"text-rag", "kg-retriever", "no-retrieval"}
    _remove_methods(page, [name for name in list_methods() if name not in keep])
    limit = page.get_by_label("Questions (first N)")
    limit.fill("3")
    limit.press("Enter")
    # the equal-budget baselines (bm25, dense) join the three chosen methods
    expect(page.get_by_text("3 questions × 5 methods = 15 runs")).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Run evaluation").click()
    expect(page.get_by_role("heading", name="Results")).to_be_visible(timeout=EVAL_S * 1000)
    plots = page.locator(".js-plotly-plot")
    expect(plots.nth(5)).to_be_attached(timeout=30_000)
    # bars, coverage vs context tokens, quality vs cost, hallucination, heatmap, failure taxonomy
    assert plots.count() == 6
    expect(plots.first).to_be_visible()
    expect(plots.first.locator(".bars, .errorbars").first).to_be_attached()
    page.set_viewport_size({"width": 1400, "height": 3200})  # the app scrolls inside; show it all
    expect(page.get_by_role("heading", name="Results")).to_be_visible()
    shot = save_screenshot(page, tmp_path, "e2e_evaluate.png")
    assert shot.stat().st_size > 10_000
    assert outside == [], f"the app fetched external resources: {outside[:5]}"
