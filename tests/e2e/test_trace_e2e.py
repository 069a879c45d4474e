"""The Trace page in a real browser: load the sample, run kg-rag offline, step with Next and check
that the highlighted graph really changes between steps (the iframe's page and the drawn canvas),
then Play to the end and check that it stops. Server, browser, page, helpers and browser
availability: tests/e2e/conftest.py. Screenshots as in test_app_e2e.py."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e]
QUESTION = "In what year was the Tidewell Line founded?"
STEP = re.compile(r"Step (\d+) of (\d+)")


@pytest.fixture
def viewport() -> dict[str, int]:
    return {"width": 1500, "height": 1100}


def _step(page: object) -> tuple[int, int]:
    text = page.get_by_text(STEP).first.inner_text()  # type: ignore[attr-defined]
    m = STEP.search(text)
    assert m, text
    return int(m.group(1)), int(m.group(2))


def _graph_state(page: object) -> tuple[str, str]:
    """(hash of the iframe's page, hash of its drawn canvas) once vis-network has settled."""
    from playwright.sync_api import expect

    frame_el = page.locator("iframe").first  # type: ignore[attr-defined]
    graph = page.frame_locator("iframe").first  # type: ignore[attr-defined]
    expect(graph.locator("body[data-kgviz-stable='1']")).to_have_count(1, timeout=30_000)
    srcdoc = frame_el.get_attribute("srcdoc") or ""
    assert "vis.Network" in srcdoc
    pixels = graph.locator("#mynetwork canvas").screenshot()
    return hashlib.sha256(srcdoc.encode()).hexdigest(), hashlib.sha256(pixels).hexdigest()


def test_trace_steps_change_the_highlighted_graph(
    server: str, page: Page, outside: list[str], tmp_path: Path,
    load_sample: Callable[..., None], save_screenshot: Callable[[Page, Path, str], Path],
) -> None:
    from playwright.sync_api import expect

    page.goto(server)
    load_sample(page)

    page.get_by_role("link", name="Trace").click()
    expect(page.get_by_role("heading", name="Trace a method")).to_be_visible(timeout=30_000)
    box = page.get_by_label("Question", exact=True)
    box.fill(QUESTION)
    box.press("Enter")
    run = page.get_by_role("button", name="Run", exact=True)
    expect(run).to_be_enabled(timeout=30_000)
    run.click()
    expect(page.get_by_text(STEP).first).to_be_visible(timeout=60_000)
    assert _step(page)[0] == 1
    total = _step(page)[1]
    assert total >= 6

    # step 1 (the plan) touches no graph element: the page says so instead of drawing
    expect(page.get_by_text("Nothing on the graph yet")).to_be_visible()
    states = []
    for k in range(2, 6):  # steps 2..5: seed, expand, score, select
        page.get_by_role("button", name="Next", exact=True).click()
        expect(page.get_by_text(f"Step {k} of {total}")).to_be_visible(timeout=30_000)
        states.append(_graph_state(page))
        if k == 5:
            save_screenshot(page, tmp_path, "e2e_trace_step5.png")
            page.set_viewport_size({"width": 1500, "height": 2600})  # the app scrolls inside
            expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=30_000)
            save_screenshot(page, tmp_path, "e2e_trace_full.png")
            page.set_viewport_size({"width": 1500, "height": 1100})
    pages = [s[0] for s in states]
    canvases = [s[1] for s in states]
    assert len(set(pages)) == len(pages), "every step should highlight a different graph"
    assert len(set(canvases)) == len(canvases), "the drawn graph should change between steps"
    expect(page.get_by_text("Rendered prompt")).to_be_visible()  # step 5 is an LLM choice
    expect(page.get_by_text("offline heuristic: choose", exact=False).first).to_be_visible()

    # Play from the second-to-last step: one tick to the end, then it stops by itself
    thumb = page.get_by_role("slider").last
    thumb.focus()
    thumb.press("End")
    thumb.press("ArrowLeft")
    expect(page.get_by_text(f"Step {total - 1} of {total}")).to_be_visible(timeout=30_000)
    play = page.get_by_role("button", name="Play", exact=True)
    expect(play).to_have_count(1, timeout=10_000)  # a rerun briefly keeps the stale button
    play.click()
    expect(page.get_by_text(f"Step {total} of {total}")).to_be_visible(timeout=30_000)
    expect(page.get_by_role("button", name="Play", exact=True)).to_have_count(1, timeout=10_000)
    page.wait_for_timeout(2500)  # a running timer would have moved on (or errored) by now
    assert _step(page) == (total, total)

    # Play from the start advances on its own
    page.get_by_role("slider").last.press("Home")
    expect(page.get_by_text(f"Step 1 of {total}")).to_be_visible(timeout=30_000)
    play = page.get_by_role("button", name="Play", exact=True)
    expect(play).to_have_count(1, timeout=10_000)  # a rerun briefly keeps the stale button
    play.click()
    expect(page.get_by_text(f"Step 4 of {total}")).to_be_visible(timeout=15_000)
    stop = page.get_by_role("button", name="Stop", exact=True)
    expect(stop).to_have_count(1, timeout=10_000)
    stop.click()
    expect(page.get_by_role("button", name="Play", exact=True)).to_have_count(1, timeout=10_000)
    stopped = _step(page)[0]
    page.wait_for_timeout(2500)
    assert _step(page)[0] == stopped
    assert outside == [], f"the app fetched external resources: {outside[:5]}"
