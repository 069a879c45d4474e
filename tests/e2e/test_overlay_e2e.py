"""Compare's evidence overlay read on a projector: at 1280×720, in the app and in the exported case
file, the key nodes' labels are measured on screen (the page's ``window.kgvizOverlay.labelPx()``:
zoom × the font each labelled node is drawn at) and must be at least 14 px; the other nodes are
unlabelled (their text is in the tooltip). Every method of the sample question is compared and
the overlay is drawn with all of them (the densest overlay), then with the default three.

Needs /usr/bin/chromium; skipped otherwise, unless KGVIZ_REQUIRE_BROWSER=1 (then it fails).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pytest

from kgviz.methods.registry import list_methods

if TYPE_CHECKING:
    from playwright.sync_api import Frame, Locator, Page

WORK_S = 240
MIN_LABEL_PX = 14.0

pytestmark = pytest.mark.e2e


@pytest.fixture
def viewport() -> dict[str, int]:
    return {"width": 1280, "height": 720}


# each drawn label's box on screen (vis-network's own measure of it): how many a border of the frame
# cuts and which pairs overlap
_LABEL_BOXES = """() => { const c = network.body.container.getBoundingClientRect();
  const on = nodes.get().filter(n => typeof n.label === 'string' && n.label.trim()).map(n => n.id);
  const boxes = on.map(k => { const s = network.body.nodes[k].labelModule.size;
    const a = network.canvasToDOM({x: s.left, y: s.top}), z = network.canvasToDOM({x: s.left + s.width, y: s.top + s.height});
    return {k: nodes.get(k).label, b: [a.x, a.y, z.x, z.y]}; });
  const cut = boxes.filter(o => o.b[0] < 0 || o.b[1] < 0 || o.b[2] > c.width || o.b[3] > c.height).map(o => o.k);
  const over = [];
  boxes.forEach((p, i) => boxes.slice(i + 1).forEach(q => { const a = p.b, b = q.b;
    if (a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]) over.push([p.k, q.k]); }));
  return {cut: cut, over: over}; }"""


def _measure(frame: Frame) -> dict[str, Any]:
    return frame.evaluate("() => ({px: window.kgvizOverlay.labelPx(), labelled: window.kgvizOverlay.labelled(),"
                          " total: nodes.length})")


def _drawn(iframe: Locator) -> Frame:
    """The overlay's frame once its layout has settled, scrolled into view (a frame off screen is
    not redrawn, so its labels would keep their first size)."""
    iframe.scroll_into_view_if_needed()
    frame = iframe.element_handle().content_frame()
    assert frame is not None
    frame.wait_for_selector("body[data-kgviz-stable='1']", state="attached", timeout=60_000)
    frame.wait_for_timeout(500)
    return frame


def test_overlay_key_labels_are_legible_in_the_app_and_the_case_file(
    page: Page, server: str, tmp_path: Path, load_sample: Callable[..., None],
    save_screenshot: Callable[[Page, Path, str], Path],
) -> None:
    from playwright.sync_api import expect

    methods = list_methods()
    page.goto(server)
    load_sample(page, timeout_s=WORK_S)
    page.get_by_role("link", name="Compare").click()
    expect(page.get_by_role("heading", name="Compare methods")).to_be_visible(timeout=30_000)
    page.get_by_test_id("stRadioGroup").get_by_text("Sample questions").click()
    compare = page.get_by_role("button", name="Compare", exact=True)
    expect(compare).to_be_enabled(timeout=30_000)
    compare.click()
    expect(page.locator(".kgviz-verdict")).to_have_count(len(methods), timeout=WORK_S * 1000)

    frame = _drawn(page.locator("iframe").first)  # the default three methods
    three = _measure(frame)
    assert three["labelled"] > 0 and three["px"] >= MIN_LABEL_PX, three
    assert three["labelled"] < three["total"], three  # the rest stay unlabelled
    boxes = frame.evaluate(_LABEL_BOXES)
    assert boxes == {"cut": [], "over": []}, boxes  # every label whole, none over another
    frame.evaluate("() => network.moveTo({scale: network.getScale() * 2.5})")  # a teacher zooms in
    frame.wait_for_timeout(500)
    zoomed = _measure(frame)
    assert MIN_LABEL_PX <= zoomed["px"] <= 1.2 * three["px"], (zoomed, three)  # the same size on screen
    frame.evaluate("() => network.moveTo({scale: network.getScale() / 2.5})")
    frame.wait_for_timeout(500)
    save_screenshot(page, tmp_path, "e2e_overlay_1280.png")

    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download case file (HTML)").click()
    case_file = tmp_path / "case.html"
    dl.value.save_as(str(case_file))

    # the case file draws every method's evidence: the densest overlay, labelled all the same
    doc = page.context.new_page()
    errors: list[str] = []
    doc.on("pageerror", lambda e: errors.append(str(e)))
    doc.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    doc.goto(case_file.as_uri())
    expect(doc.get_by_role("heading", name="kgviz case file")).to_be_visible()
    drawn = _drawn(doc.locator("iframe#kgviz-overlay"))
    every = _measure(drawn)
    print(f"overlay label px at 1280x720: app (default methods) {three}, case file (every method) {every}")
    assert every["labelled"] > 0 and every["px"] >= MIN_LABEL_PX, every
    assert every["total"] > three["total"], (every, three)
    doc.screenshot(path=str(tmp_path / "e2e_case_overlay_1280.png"))
    # a clicked claim selects its cited nodes in the overlay and shows their labels
    links = doc.locator("a.kgviz-claim-link[data-keys]:not([data-keys=''])")
    if links.count():
        keys = (links.first.get_attribute("data-keys") or "").split()
        links.first.evaluate("a => a.click()")  # the link's own click: a pointer click here lands off it
        drawn.wait_for_selector("body[data-kgviz-highlighted]", state="attached", timeout=10_000)
        assert errors == [], errors
        shown = drawn.evaluate("(ks) => ks.map(k => (nodes.get(k) || {}).label || '')", keys)
        assert all(s.strip() for s in shown), shown
