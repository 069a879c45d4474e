"""Compare end to end in a real browser: `streamlit run app.py` (temp KGVIZ_HOME, offline), Debian
chromium via Playwright. Load the sample, compare every method on a sample question, see one
column per method (the cards drawn one by one as the methods finish, each with its verdict) and the evidence overlay drawn, download the HTML case file and open it from
disk with every network request blocked and recorded (there must be none).

Needs /usr/bin/chromium; skipped otherwise, unless KGVIZ_REQUIRE_BROWSER=1 (then it fails).
Server, browser, page and helpers: tests/e2e/conftest.py (never runs `playwright install`).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from kgviz.methods.registry import list_methods

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Route

WORK_S = 240

pytestmark = pytest.mark.e2e


@pytest.fixture
def viewport() -> dict[str, int]:
    return {"width": 1500, "height": 1100}


# the last method waits a few seconds: the offline methods finish within a second on a quiet
# machine, and the browser then may draw the cards' progress only once, all done
@pytest.mark.parametrize("pauses", ["method:no-retrieval=4"])
def test_compare_all_methods_overlay_and_offline_case_file(
    server: str, browser: Browser, page: Page, outside: list[str], tmp_path: Path,
    load_sample: Callable[..., None], save_screenshot: Callable[[Page, Path, str], Path],
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
    # every progress line the page draws while the methods run ("k of n methods done ...")
    page.evaluate("""() => {
        window.kgvizProgress = [];
        new MutationObserver(() => {
            for (const el of document.querySelectorAll('[data-testid="stCaptionContainer"]')) {
                const t = el.textContent;
                if (/ of \\d+ methods done/.test(t) && !window.kgvizProgress.includes(t)) window.kgvizProgress.push(t);
            }
        }).observe(document.body, {childList: true, subtree: true, characterData: true});
    }""")
    compare.click()
    for m in methods:  # one column per method, headed by its name
        expect(page.get_by_role("heading", name=m, exact=True)).to_be_visible(timeout=WORK_S * 1000)
    expect(page.locator(".kgviz-verdict")).to_have_count(len(methods), timeout=WORK_S * 1000)
    expect(page.get_by_role("heading", name="Evidence overlay")).to_be_visible(timeout=WORK_S * 1000)
    # the cards came one by one: the page said so while some methods were done and others running
    progress = page.evaluate("window.kgvizProgress")
    done = sorted({int(t.split(" of ")[0].split()[-1]) for t in progress})
    assert done and done[0] == 0, progress
    # at least one moment with some cards done and others running (no-retrieval's pause makes one
    # for certain); how many such moments the browser sees depends on the load, so not counted
    assert any(0 < k < len(methods) for k in done), progress
    expect(page.get_by_text("Hallucination = an answer").first).to_be_visible()

    page.screenshot(path=str(tmp_path / "e2e_compare_columns.png"))
    overlay = page.frame_locator("iframe").first
    expect(overlay.locator("#mynetwork canvas")).to_be_visible(timeout=60_000)
    expect(overlay.locator("#kgviz-legend")).to_contain_text("shared by")
    page.locator("iframe").first.scroll_into_view_if_needed()
    save_screenshot(page, tmp_path, "e2e_compare.png")
    # facets: one graph per picked method (three by default), drawn at the same places
    page.get_by_text("One graph per method (same places)").click()
    expect(page.locator("iframe")).to_have_count(3, timeout=30_000)
    for i in range(3):
        facet = page.frame_locator("iframe").nth(i)
        expect(facet.locator("body[data-kgviz-stable='1']")).to_have_count(1, timeout=30_000)
    page.locator("iframe").first.scroll_into_view_if_needed()
    save_screenshot(page, tmp_path, "e2e_compare_facets.png")
    page.get_by_text("One graph, coloured by method").click()
    expect(page.locator("iframe")).to_have_count(1, timeout=30_000)

    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download case file (HTML)").click()
    case_file = tmp_path / "case.html"
    dl.value.save_as(str(case_file))
    assert outside == [], f"the app fetched external resources: {outside[:5]}"

    # the case file opens from disk with the network cut off, and asks for nothing
    offline = browser.new_context(viewport={"width": 1300, "height": 1000})
    requested: list[str] = []

    def block(route: Route) -> None:
        url = route.request.url
        if url.startswith(("file:", "data:", "about:", "blob:")):
            route.continue_()
        else:
            requested.append(url)
            route.abort()

    offline.route("**/*", block)
    doc = offline.new_page()
    doc.on("request", lambda r: requested.append(r.url) if not r.url.startswith(
        ("file:", "data:", "about:", "blob:")) else None)
    doc.goto(case_file.as_uri())
    expect(doc.get_by_role("heading", name="kgviz case file")).to_be_visible()
    for m in methods:
        expect(doc.get_by_role("heading", name=m, exact=True)).to_be_visible()
    drawn = doc.frame_locator("iframe").first
    expect(drawn.locator("#mynetwork canvas")).to_be_visible(timeout=30_000)
    expect(drawn.locator("body[data-kgviz-stable='1']")).to_have_count(1, timeout=30_000)
    doc.screenshot(path=str(tmp_path / "e2e_case_file.png"), full_page=True)
    assert requested == [], f"the case file requested: {requested[:5]}"
