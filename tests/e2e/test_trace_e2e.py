"""The Trace player in a real browser at 1280×720 (a projector): load the sample, trace every
registered method offline, and inside the player's iframe check, through the vis-network API,
that Next keeps the zoom (network.getScale()), that the current step's labels are drawn at
≥ 12 px (scale × font size) and that some of its chosen nodes are in view; then Play visits every step in order with the panel in sync.
Screenshots of each method's key step go to tmp_path (and $KGVIZ_SCREENSHOT_DIR when set; the
README's pictures, in presentation mode, come from tests/e2e/test_classroom_e2e.py). Fixtures: tests/e2e/conftest.py."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Frame, Page

pytestmark = [pytest.mark.e2e]
QUESTION = "In what year was the Tidewell Line founded?"
MIN_LABEL_PX = 12.0
# the step that shows what the method is about (1-based), for the screenshots
KEY_STEP = {"kg-rag": 5, "kg-retriever": 2, "kg-infused": 6, "ket-rag": 5, "text-rag": 4}


@pytest.fixture
def viewport() -> dict[str, int]:
    return {"width": 1280, "height": 720}


def _player(page: Page, method: str) -> Frame:
    """The player iframe's frame once it shows ``method``'s run."""
    from playwright.sync_api import expect

    graph = page.frame_locator("iframe").first
    expect(graph.locator(f"body[data-kgviz-run='{method}'][data-kgviz-stable='1']")).to_have_count(
        1, timeout=60_000)
    frame = page.locator("iframe").first.element_handle().content_frame()
    assert frame is not None
    frame.wait_for_function("window.kgvizPlayer !== undefined && window.kgvizPlayer.step() === 1")
    return frame


def _pick_method(page: Page, method: str) -> None:
    box = page.get_by_role("combobox", name="Method")
    box.click()
    page.keyboard.type(f"— {method}")  # the selectbox filters its options as one types
    page.keyboard.press("Enter")


def _state(frame: Frame) -> dict[str, Any]:
    return frame.evaluate("({step: kgvizPlayer.step(), scale: kgvizPlayer.network.getScale(),"
                          " px: kgvizPlayer.labelPx(), focus: kgvizPlayer.focus().length,"
                          " key: kgvizPlayer.keyInView(),"
                          " panel: document.querySelector('#kp-panel .kp-head').textContent})")


# what the player draws around the graph and must not hide: the "k of n highlighted" note never lies
# over the graph (it covered the labels at its bottom), and no legend item is cut off at the
# legend's edge (a long shape key was cut to "circle …")
_AROUND = """() => { const g = document.getElementById('kp-graph').getBoundingClientRect();
  const v = document.getElementById('kp-view'), r = v.getBoundingClientRect();
  const over = v.textContent !== '' && r.left < g.right && g.left < r.right && r.top < g.bottom && g.top < r.bottom;
  const L = document.getElementById('kp-legend'), box = L.getBoundingClientRect();
  const cut = Array.from(L.children).filter(e => { const b = e.getBoundingClientRect();
    return b.right > box.right + 0.5 || b.bottom > box.bottom + 0.5; }).map(e => e.textContent);
  return {over: over, cut: cut, scrolls: L.scrollWidth > L.clientWidth + 1}; }"""


def test_every_method_steps_in_the_browser_with_legible_labels(
    server: str, page: Page, outside: list[str], tmp_path: Path,
    load_sample: Callable[..., None], save_screenshot: Callable[[Page, Path, str], Path],
    view_settled: Callable[..., None],
) -> None:
    from playwright.sync_api import expect

    from kgviz.methods.registry import list_methods

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
    seen: dict[str, list[dict[str, Any]]] = {}
    for method in list_methods():
        if method != "kg-rag":
            _pick_method(page, method)  # re-runs by itself after the first Run (offline)
        frame = _player(page, method)
        total = frame.evaluate("kgvizPlayer.total")
        _wait_key_in_view(frame)
        states = [_state(frame)]
        around = [frame.evaluate(_AROUND)]
        for k in range(2, total + 1):
            frame.click("#kp-next")
            frame.wait_for_function(f"kgvizPlayer.step() === {k}")
            view_settled(frame)  # the pan that brings the step into view is over
            _wait_key_in_view(frame)
            states.append(_state(frame))
            around.append(frame.evaluate(_AROUND))
            if KEY_STEP.get(method) == k:
                if method == "kg-rag":  # the hop's choice: the chosen fact and entity both in view
                    assert states[-1]["key"][0] == states[-1]["key"][1], states[-1]
                page.locator("iframe").first.scroll_into_view_if_needed()
                shot = tmp_path / f"trace_{method}.png"
                page.locator("iframe").first.screenshot(path=str(shot))
                save_screenshot(page, tmp_path, f"trace_{method}_page.png")
                _keep(shot)
        frame.click("#kp-fit")  # on the last step: the view and the bar's "k of n" agree after a fit too
        _wait_key_in_view(frame)
        seen[method] = states
        assert [s["step"] for s in states] == list(range(1, total + 1))
        hidden = [(k, a) for k, a in enumerate(around, 1) if a["over"] or a["cut"] or a["scrolls"]]
        assert hidden == [], f"{method}: the player hides part of the graph or the legend: {hidden}"
        drawn = [s for s in states if s["focus"]]
        if method == "no-retrieval":  # nothing to draw: the player says so instead
            assert not drawn
            expect(page.frame_locator("iframe").first.locator("#kp-empty")).to_contain_text("Nothing on the graph")
            continue
        assert drawn, f"{method}: no step drew anything"
        scales = {round(s["scale"], 6) for s in drawn}
        assert len(scales) == 1, f"{method}: Next changed the zoom: {scales}"
        assert min(s["px"] for s in drawn) >= MIN_LABEL_PX, (method, [s["px"] for s in drawn])
        assert [s["panel"] for s in states] == [f"Step {k} of {total}" + s["panel"][len(f"Step {k} of {total}"):]
                                                for k, s in enumerate(states, 1)]
    assert set(seen) == set(list_methods())
    assert outside == [], f"the app fetched external resources: {outside[:5]}"


def _wait_key_in_view(frame: Frame) -> None:
    """A step whose chosen / seed / context nodes do not all fit at a legible zoom still shows some
    of them once the pan ends (the player looks at their densest part; centring on the centroid of a
    spread-out step once showed none of its 29), and the bar says how many: "k of n highlighted in
    view", empty when all are. Times out, and so fails, when none comes into view or the bar's
    count disagrees with the view."""
    frame.wait_for_function("(() => { const k = kgvizPlayer.keyInView(); return k[1] === 0 || k[0] >= 1; })()",
                            timeout=10_000)
    frame.wait_for_function("(() => { const k = kgvizPlayer.keyInView();"
                            " const t = document.getElementById('kp-view').textContent;"
                            " return k[0] < k[1] ? t.startsWith(k[0] + ' of ' + k[1] + ' highlighted') : t === ''; })()",
                            timeout=10_000)


def _keep(shot: Path) -> None:
    import os
    import shutil

    extra = os.environ.get("KGVIZ_SCREENSHOT_DIR")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(extra) / shot.name)


def test_play_visits_every_step_in_order_with_the_panel_in_sync(
    server: str, page: Page, load_sample: Callable[..., None],
) -> None:
    from playwright.sync_api import expect

    page.goto(server)
    load_sample(page)
    page.get_by_role("link", name="Trace").click()
    box = page.get_by_label("Question", exact=True)
    box.fill(QUESTION)
    box.press("Enter")
    page.get_by_role("button", name="Run", exact=True).click()
    frame = _player(page, "kg-rag")
    total = frame.evaluate("kgvizPlayer.total")
    frame.evaluate("kgvizPlayer.log.length = 0")
    scale = frame.evaluate("kgvizPlayer.network.getScale()")
    frame.click("#kp-play")
    expect(page.frame_locator("iframe").first.locator("#kp-play")).to_have_text("Pause")
    frame.wait_for_function(f"kgvizPlayer.step() === {total} && !kgvizPlayer.playing()",
                            timeout=(total + 5) * 2000)
    log = frame.evaluate("kgvizPlayer.log")
    assert [e["step"] for e in log] == list(range(2, total + 1)), "Play skipped or repeated a step"
    for e in log:  # the panel and the counter describe the step the graph shows, at every tick
        assert e["panel"].startswith(f"Step {e['step']} of {total} · ") and e["count"] == f"Step {e['step']} of {total}"
    assert frame.evaluate("kgvizPlayer.network.getScale()") == pytest.approx(scale)  # Play keeps the zoom
    expect(page.frame_locator("iframe").first.locator("#kp-play")).to_have_text("Play")
    frame.wait_for_timeout(2500)  # a running timer would have moved on (or errored) by now
    assert frame.evaluate("kgvizPlayer.step()") == total
    # Pause stops it mid-way
    frame.click("#kp-play")  # at the end, Play starts over from step 1
    frame.wait_for_function("kgvizPlayer.step() >= 3")
    frame.click("#kp-play")
    stopped = frame.evaluate("kgvizPlayer.step()")
    frame.wait_for_timeout(2500)
    assert frame.evaluate("kgvizPlayer.step()") == stopped and not frame.evaluate("kgvizPlayer.playing()")
