"""End to end in a real browser: `streamlit run app.py` with a temp KGVIZ_HOME, Debian chromium
driven by Playwright. Load the sample from Home, open Explore, search an entity, and check that
vis-network drew a canvas inside the graph iframe.

Needs /usr/bin/chromium (CI installs it); skipped with a reason otherwise, failed instead when
KGVIZ_REQUIRE_BROWSER=1. Server, browser, page and screenshot helpers: tests/e2e/conftest.py
(never runs `playwright install`). Screenshots go to a temp folder (and, when
KGVIZ_SCREENSHOT_DIR is set, there too).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

BUILD_S = 180

pytestmark = [pytest.mark.e2e]


def test_sample_build_explore_renders_graph(
    server: str, page: Page, outside: list[str], tmp_path: Path,
    load_sample: Callable[..., None], save_screenshot: Callable[[Page, Path, str], Path],
) -> None:
    from playwright.sync_api import expect

    page.goto(server)
    expect(page.get_by_role("heading", name="kgviz", level=1)).to_be_visible(timeout=30_000)
    expect(page.get_by_text("offline heuristics — no LLM").first).to_be_visible()

    load_sample(page)
    save_screenshot(page, tmp_path, "e2e_home_sample_built.png")

    page.get_by_role("link", name="Build").click()
    page.get_by_test_id("stRadioGroup").get_by_text("Sample corpus").click()
    expect(page.get_by_text("$0 (offline)").first).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Build", exact=True).click()
    expect(page.get_by_role("heading", name="Build report")).to_be_visible(timeout=BUILD_S * 1000)
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    page.set_viewport_size({"width": 1400, "height": 2800})  # the app scrolls inside; show it all
    expect(page.get_by_role("heading", name="Build report")).to_be_visible()
    save_screenshot(page, tmp_path, "e2e_build_report.png")
    page.set_viewport_size({"width": 1400, "height": 1000})

    page.get_by_role("link", name="Explore").click()
    search = page.get_by_label("Search an entity")
    expect(search).to_be_visible(timeout=30_000)
    search.fill("Vohl")
    search.press("Enter")

    frame_el = page.locator("iframe").first
    expect(frame_el).to_be_visible(timeout=60_000)
    graph = page.frame_locator("iframe").first
    canvas = graph.locator("#mynetwork canvas")
    expect(canvas).to_be_visible(timeout=30_000)
    # physics is switched off once stabilised: the layout is final
    expect(graph.locator("body[data-kgviz-stable='1']")).to_have_count(1, timeout=30_000)
    box = canvas.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 200
    expect(page.get_by_text("showing ", exact=False).first).to_be_visible()
    frame_el.scroll_into_view_if_needed()
    shot = save_screenshot(page, tmp_path, "e2e_explore_graph.png")
    # two hops: the view fitted to the frame zooms far out, and the labels stay legible (they were
    # drawn at the zoom x their 14-unit font, about 4 px)
    page.get_by_role("radiogroup", name="Hops").get_by_text("2").click()
    expect(page.get_by_text("within 2 hop(s)", exact=False).first).to_be_visible(timeout=60_000)
    expect(graph.locator("body[data-kgviz-stable='1']")).to_have_count(1, timeout=30_000)
    hops2 = page.locator("iframe").first.element_handle().content_frame()
    assert hops2 is not None
    hops2.wait_for_timeout(500)
    px = hops2.evaluate("() => nodes.get().filter(n => typeof n.label === 'string' && n.label.trim())"
                        ".map(n => network.getScale() * network.body.nodes[n.id].options.font.size)")
    assert len(px) > 20 and min(px) >= 12.0, (len(px), min(px) if px else None)
    assert shot.stat().st_size > 10_000
    details = page.get_by_text("Triples (", exact=False)
    expect(details).to_be_visible(timeout=30_000)
    page.set_viewport_size({"width": 1400, "height": 2400})
    expect(page.get_by_text("Triples (", exact=False)).to_be_visible()
    save_screenshot(page, tmp_path, "e2e_explore_details.png")
    assert outside == [], f"the app fetched external resources: {outside[:5]}"


def test_hostile_labels_render_as_text_in_browser(browser: Browser, tmp_path: Path) -> None:
    """The escaping round trip in a real browser: hostile names show up as literal text on the
    canvas and in tooltips, nothing executes, and the page requests nothing from outside."""
    from kgviz.viz.graph_html import VizEdge, VizNode, graph_html

    hostile = ["<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "AT&T </script><b>x</b>"]
    nodes = [VizNode(f"id{i}", h, title=f"{h}\nsecond line") for i, h in enumerate(hostile)]
    edges = [VizEdge("id0", "id1", label=hostile[1], title=hostile[2])]
    page_file = tmp_path / "graph.html"
    page_file.write_text(graph_html(nodes, edges, height=400), encoding="utf-8")
    doc = browser.new_page()
    dialogs: list[str] = []
    requests: list[str] = []
    doc.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    doc.on("request", lambda r: requests.append(r.url))
    doc.goto(page_file.as_uri())
    doc.wait_for_function("document.body.dataset.kgvizStable === '1'", timeout=20_000)
    labels = doc.evaluate("nodes.get().map(n => n.label)")
    tips = doc.evaluate("nodes.get().map(n => n.title.textContent)")
    edge = doc.evaluate("edges.get().map(e => [e.label, e.title.textContent])")[0]
    injected = doc.evaluate("document.querySelectorAll('img, b, .kgviz-tip script').length")
    assert dialogs == []
    assert labels == hostile
    assert tips == [f"{h}\nsecond line" for h in hostile]
    assert edge[0] == hostile[1][:27] + "…" and edge[1] == hostile[2]  # edge labels are cut at 28
    assert injected == 0
    assert [u for u in requests if not u.startswith("file:")] == []
