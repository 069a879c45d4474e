"""Classroom mode in Chromium at 1280×720 (a projector), issue 26.

In the app: presentation mode on the Trace page, every method on the sample question: for every
step the smallest key-node label (the player's ``labelPx()``) is ≥ 16 px and no text of the step
panel, the algorithm box, the legend or the timeline is under 16 px; the player's bar is on
screen below Streamlit's header; on KG-RAG's "choose the next fact" the chosen and the rejected
facts are all in view after "Fit step". Screenshots of each method's key step go to tmp_path and
$KGVIZ_SCREENSHOT_DIR (the README's pictures).

Lessons: ``kgviz lesson`` files of each method (and two methods in one file) opened from
file://: no request but the file itself, every step reached with Next and with the timeline, the
lit algorithm line is the step's own and changes with it, and two methods step in sync.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Frame, Page

pytestmark = [pytest.mark.e2e]
QUESTION = "In what year was the Tidewell Line founded?"
MIN_PX = 16.0
KEY_STEP = {"kg-rag": 5, "kg-retriever": 3, "kg-infused": 6, "ket-rag": 2, "text-rag": 4}
ROOT = Path(__file__).resolve().parents[2]
# the smallest font of any text the class reads: step panel, algorithm box, legend, timeline, bar
MIN_FONT_JS = """(() => { let m = 1e9, where = '';
  document.querySelectorAll('.kp-panel *, .kp-algo *, .kp-legend *, #kp-timeline *, #kp-bar *').forEach(e => {
    if (!Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim())) return;
    const f = parseFloat(getComputedStyle(e).fontSize);
    if (f < m) { m = f; where = e.className + ': ' + e.textContent.slice(0, 40); } });
  return [m, where]; })()"""


@pytest.fixture
def viewport() -> dict[str, int]:
    return {"width": 1280, "height": 720}


def _keep(shot: Path) -> None:
    import shutil

    extra = os.environ.get("KGVIZ_SCREENSHOT_DIR")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(extra) / shot.name)


def _player(page: Page, method: str) -> Frame:
    from playwright.sync_api import expect

    graph = page.frame_locator("iframe").first
    expect(graph.locator(f"body[data-kgviz-run='{method}'][data-kgviz-stable='1']")).to_have_count(1, timeout=60_000)
    frame = page.locator("iframe").first.element_handle().content_frame()
    assert frame is not None
    frame.wait_for_function("window.kgvizPlayer !== undefined && kgvizPlayer.step() === 1 && kgvizPlayer.present()")
    return frame


def _pick_method(page: Page, method: str) -> None:
    box = page.get_by_role("combobox", name="Method")
    box.click()
    page.keyboard.type(f"— {method}")
    page.keyboard.press("Enter")


def test_presentation_mode_is_legible_on_every_method_at_1280x720(
    server: str, page: Page, outside: list[str], tmp_path: Path, load_sample: Callable[..., None],
    view_settled: Callable[..., None],
) -> None:
    from playwright.sync_api import expect

    from kgviz.methods.registry import list_methods

    page.goto(server)
    button = page.get_by_role("button", name="Load sample data")
    expect(button).to_be_visible(timeout=30_000)
    where = button.bounding_box()
    assert where is not None and where["y"] + where["height"] <= 720, where  # Home: in the first screen
    load_sample(page)
    page.get_by_role("link", name="Trace").click()
    expect(page.get_by_role("heading", name="Trace a method")).to_be_visible(timeout=30_000)
    page.get_by_text("Presentation mode").click()
    page.wait_for_function("location.search.includes('present=1')")  # kept in the URL
    box = page.get_by_label("Question", exact=True)
    box.fill(QUESTION)
    box.press("Enter")
    page.get_by_role("button", name="Run", exact=True).click()
    checked: dict[str, int] = {}
    for method in list_methods():
        if method != "kg-rag":
            _pick_method(page, method)
        frame = _player(page, method)
        frame.wait_for_timeout(300)  # the player scrolls itself into view
        # the whole player is on screen and its bar below the page's header
        header = page.locator("header[data-testid='stHeader']").bounding_box()
        ifr = page.locator("iframe").first.bounding_box()
        bar = frame.locator("#kp-bar").bounding_box()
        assert header is not None and ifr is not None and bar is not None
        assert bar["y"] >= header["y"] + header["height"] - 1, (method, bar, header)
        assert ifr["y"] + ifr["height"] <= 720 + 1, (method, ifr)
        total = frame.evaluate("kgvizPlayer.total")
        for k in range(1, total + 1):
            if k > 1:
                frame.click("#kp-next")
                frame.wait_for_function(f"kgvizPlayer.step() === {k}")
                view_settled(frame)  # the pan is over
            s = frame.evaluate("({px: kgvizPlayer.labelPx(), n: kgvizPlayer.panes[0].labelled(),"
                               " title: document.querySelector('#kp-panel h3').textContent})")
            if s["n"]:
                assert s["px"] >= MIN_PX - 1e-6, (method, k, s)
            smallest, where = frame.evaluate(MIN_FONT_JS)
            assert smallest >= MIN_PX, (method, k, where)
            if method == "kg-rag" and "choose the next fact" in s["title"]:
                frame.click("#kp-fit")
                frame.wait_for_timeout(150)
                c = frame.evaluate("kgvizPlayer.contrast()")
                assert c["chosen"][1] >= 1 and c["rejected"][1] >= 1, c
                assert c["chosen"][0] == c["chosen"][1] and c["rejected"][0] == c["rejected"][1], c
                assert frame.evaluate("kgvizPlayer.labelPx()") >= MIN_PX  # by layout, not by zooming out
                checked["choose"] = k
            if KEY_STEP.get(method) == k:
                shot = tmp_path / f"present_{method}.png"
                page.locator("iframe").first.screenshot(path=str(shot))
                _keep(shot)
                if method == "kg-rag":
                    shot = tmp_path / "present_page-1280x720.png"
                    page.screenshot(path=str(shot))
                    _keep(shot)
        checked[method] = total
    assert "choose" in checked, "KG-RAG showed no 'choose the next fact' step"
    assert set(list_methods()) <= set(checked)
    assert outside == [], outside[:5]


# --- lessons --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lessons(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One lesson file per method and one with kg-rag and ket-rag side by side, written by the CLI
    on a freshly built sample (offline, hashing embedder). The CLI runs in this process (its
    ``main``, as tests/test_cli_lesson.py calls it): a ``python -m kgviz.cli`` per file spent most
    of this fixture's minute importing kgviz again."""
    from kgviz.cli import main
    from kgviz.methods.registry import list_methods

    tmp = tmp_path_factory.mktemp("lessons")
    db = tmp / "db"
    out: dict[str, Path] = {}
    with pytest.MonkeyPatch.context() as env:
        for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
            env.delenv(key, raising=False)
        env.setenv("KGVIZ_HOME", str(tmp / "home"))
        env.setenv("KGVIZ_LLM", "offline")
        env.setenv("KGVIZ_EMBEDDER", "hashing")
        assert main(["build", str(ROOT / "sample_data" / "corpus"), "--db", str(db)]) == 0
        for methods in [[m] for m in list_methods()] + [["kg-rag", "ket-rag"]]:
            name = "+".join(methods)
            target = tmp / f"{name}.html"
            args = [a for m in methods for a in ("--method", m)]
            assert main(["lesson", QUESTION, *args, "--db", str(db), "-o", str(target)]) == 0, name
            out[name] = target
    return out


def _open(browser: Browser, path: Path) -> tuple[Page, list[str]]:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri() + "?present=1")
    page.wait_for_function("document.body.dataset.kgvizStable === '1' && window.kgvizPlayer !== undefined")
    return page, requests


def _lit(page: Page, pane: int = 0) -> Any:
    return page.evaluate(f"(() => {{ const p = kgvizPlayer.panes[{pane}];"
                         f" const li = document.querySelectorAll('.kp-pane')[{pane}].querySelector('.kp-algo li.lit');"
                         " return [p.D.algo ? p.D.algo.steps[p.step() - 1] : null, li ? li.querySelector('.t').textContent : null]; })()")


def test_each_lesson_plays_offline_from_file_with_next_and_the_timeline(browser: Browser,
                                                                        lessons: dict[str, Path]) -> None:
    from kgviz.methods.registry import list_methods

    for method in list_methods():
        page, requests = _open(browser, lessons[method])
        assert page.evaluate("kgvizPlayer.present()"), method
        total = page.evaluate("kgvizPlayer.total")
        lines = []
        for k in range(1, total + 1):
            if k > 1:
                page.click("#kp-next")
            assert page.evaluate("kgvizPlayer.step()") == k, (method, k)
            n, lit = _lit(page)
            algo = page.evaluate("kgvizPlayer.algoLine()")
            assert n is not None and algo.startswith(f"{n} "), (method, k, algo)  # the step's own line
            assert lit is not None and algo == f"{n} {lit}", (method, k, lit, algo)  # and it is the one lit
            lines.append(algo)
        assert len(set(lines)) > 1, (method, lines)  # the lit line moves with the steps
        assert page.locator("#kp-next").is_disabled()
        segs = page.locator("#kp-timeline .kp-seg")
        assert segs.count() == total
        for k in range(total, 0, -1):  # every step by the timeline, backwards
            segs.nth(k - 1).click()
            assert page.evaluate("kgvizPlayer.step()") == k, (method, k)
        marks = page.evaluate("Array.from(document.querySelectorAll('.kp-mark-label')).map(e => e.textContent)")
        assert "answer" in marks, (method, marks)
        assert [u for u in requests if u != page.url] == [], (method, requests)
        page.context.close()


def test_two_methods_in_one_lesson_play_in_sync(browser: Browser, lessons: dict[str, Path]) -> None:
    page, requests = _open(browser, lessons["kg-rag+ket-rag"])
    n = page.evaluate("kgvizPlayer.panes.map(p => p.n)")
    total = page.evaluate("kgvizPlayer.total")
    assert total == max(n) and len(n) == 2
    # one shared layout: a node both runs draw sits at the same place in both graphs
    same = page.evaluate("""(() => { const [a, b] = kgvizPlayer.panes.map(p => p.D.nodes);
      const at = {}; a.forEach(x => { at[x.tip] = [x.x, x.y]; });
      const both = b.filter(x => at[x.tip]);
      return [both.length, both.filter(x => at[x.tip][0] === x.x && at[x.tip][1] === x.y).length]; })()""")
    assert same[0] >= 1 and same[0] == same[1], same
    page.evaluate("kgvizPlayer.setSpeed(4)")
    assert page.evaluate("kgvizPlayer.interval()") == pytest.approx(300)
    page.evaluate("kgvizPlayer.log.length = 0")
    page.click("#kp-play")
    page.wait_for_function(f"kgvizPlayer.step() === {total} && !kgvizPlayer.playing()", timeout=30_000)
    seen = page.evaluate("kgvizPlayer.log.map(e => e.step)")
    assert seen == list(range(2, total + 1))
    for k in range(1, total + 1):
        page.evaluate(f"kgvizPlayer.go({k - 1})")
        assert page.evaluate("kgvizPlayer.steps()") == [min(k, n[0]), min(k, n[1])]
        lines = page.evaluate("kgvizPlayer.algoLine()")
        assert len(lines) == 2 and all(lines), (k, lines)
    # Previous during Play steps back and keeps playing
    page.evaluate("kgvizPlayer.setSpeed(0.5)")
    page.evaluate("kgvizPlayer.go(3)")
    page.click("#kp-play")
    page.click("#kp-prev")
    assert page.evaluate("kgvizPlayer.step()") == 3 and page.evaluate("kgvizPlayer.playing()")
    page.click("#kp-play")
    assert [u for u in requests if u != page.url] == [], requests


def test_predict_then_reveal_stops_at_each_decision(browser: Browser, lessons: dict[str, Path]) -> None:
    page, _requests = _open(browser, lessons["kg-rag"])
    decisions = page.evaluate("kgvizPlayer.panes[0].D.steps.map((s, i) => s.decision ? i + 1 : 0).filter(Boolean)")
    assert decisions, "kg-rag recorded no decision step"
    page.click("#kp-quiz")
    page.evaluate("kgvizPlayer.setSpeed(4)")
    page.click("#kp-play")  # Play waits at the first decision
    page.wait_for_function("!kgvizPlayer.playing()", timeout=20_000)
    assert page.evaluate("kgvizPlayer.step()") == decisions[0] and page.evaluate("kgvizPlayer.asking()")
    assert page.locator("#kp-reveal").is_visible()
    # the method's choice is hidden: the chosen node is drawn in the candidates' colour, the panel has no "Why"
    state = page.evaluate("""(() => { const p = kgvizPlayer.panes[0], D = p.D;
      const v = D.visuals[D.steps[p.step() - 1].v];
      const chosen = v.nodes.find(n => n[1] === 'chosen'), rejected = v.nodes.find(n => n[1] === 'rejected');
      const drawn = kgvizPlayer.network.body.data.nodes.get(chosen[0]).color.background;
      return {drawn: drawn, candidate: D.colours.candidate, rejected: rejected ? rejected[0] : null,
              label: rejected ? D.nodes[rejected[0]].label : ''}; })()""")
    assert state["drawn"] == state["candidate"] and state["rejected"] is not None
    assert "Why" not in page.locator("#kp-panel").inner_text()
    page.evaluate(f"kgvizPlayer.panes[0].pick({state['rejected']})")  # the class picks a candidate the method rejects
    assert "The class picked" in page.locator("#kp-panel").inner_text()
    page.click("#kp-reveal")
    panel = page.locator("#kp-panel").inner_text()
    assert "Why" in panel and "the method marked it rejected" in panel, panel
    assert not page.evaluate("kgvizPlayer.asking()")
    page.context.close()
