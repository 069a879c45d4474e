"""The failure explorer in a real browser (issue 25's must-show): run a small evaluation, filter
"gold in context but wrong" for one method, save the filter by name, reload the page (a new
session), run again (every run reused), reopen the filter, open a row in Trace and come back to the
same filter; then label two runs and see the agreement figure count them. And on Compare, click a
claim and see its evidence highlighted (the passage's span, the overlay's node, the case file).
Needs /usr/bin/chromium (tests/e2e/conftest.py)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from kgviz.methods.registry import list_methods

from test_evaluate_e2e import EVAL_S, _remove_methods

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.e2e
IDLE = "!document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]')"


def _evaluate(page: Page) -> None:
    from playwright.sync_api import expect

    page.get_by_role("link", name="Evaluate").click()
    expect(page.get_by_role("heading", name="Evaluate methods")).to_be_visible(timeout=30_000)
    _remove_methods(page, [n for n in list_methods() if n not in ("text-rag", "no-retrieval")])
    limit = page.get_by_label("Questions (first N)")
    limit.fill("6")
    limit.press("Enter")
    expect(page.get_by_text("6 questions × 4 methods = 24 runs")).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Run evaluation").click()
    expect(page.get_by_role("heading", name="Failures")).to_be_visible(timeout=EVAL_S * 1000)


def _choose(page: Page, label: str, option: str | int) -> None:
    """Open a select box and click one option, again if a rerun closed the list first."""
    for _ in range(4):
        _settle(page)
        page.get_by_label(label, exact=True).click()
        item = page.get_by_role("option").nth(option) if isinstance(option, int) else \
            page.get_by_role("option", name=option, exact=True)
        try:
            item.click(timeout=5_000)
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: the list closed under a rerun; retry
            page.keyboard.press("Escape")
            continue
        page.keyboard.press("Escape")
        _settle(page)
        return
    raise AssertionError(f"could not choose {option!r} in {label!r}")


def _settle(page: Page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function(IDLE, timeout=30_000)


def test_saved_failure_filter_survives_a_reload_and_a_trip_to_trace(
    server: str, page: Page, tmp_path: Path, load_sample: Callable[..., None],
    save_screenshot: Callable[[Page, Path, str], Path],
) -> None:
    from playwright.sync_api import expect

    page.goto(server)
    expect(page.get_by_role("heading", name="kgviz", level=1)).to_be_visible(timeout=30_000)
    load_sample(page)
    _evaluate(page)
    expect(page.get_by_text("24 of 24 runs ·")).to_be_visible(timeout=30_000)
    _settle(page)
    _choose(page, "Show methods", "text-rag")
    expect(page.get_by_text("6 of 24 runs ·")).to_be_visible(timeout=30_000)  # text-rag's 6 runs
    page.get_by_text("Gold in context but wrong").first.click()
    _settle(page)
    expect(page.get_by_text("6 of 24 runs ·")).to_have_count(0, timeout=30_000)  # some had no gold in context
    shown = page.get_by_text("of 24 runs ·").first
    count = shown.inner_text().split(" of ")[0]
    name = page.get_by_label("Save this filter as")
    name.fill("text-rag had it")
    name.press("Enter")
    _settle(page)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved filter 'text-rag had it'")).to_be_visible(timeout=30_000)
    page.set_viewport_size({"width": 1400, "height": 4200})
    save_screenshot(page, tmp_path, "e2e_failures.png")
    page.set_viewport_size({"width": 1400, "height": 1000})

    page.reload()  # a new session: the last evaluation is gone, the saved filter is not
    expect(page.get_by_role("heading", name="Evaluate methods")).to_be_visible(timeout=30_000)
    _evaluate(page)
    expect(page.get_by_text("24 of 24 runs ·")).to_be_visible(timeout=30_000)
    _choose(page, "Saved filter", "text-rag had it")
    page.get_by_role("button", name="Open saved filter").click()
    _settle(page)
    expect(page.get_by_text(f"{count} of 24 runs ·")).to_be_visible(timeout=30_000)

    assert int(count) >= 2, "the sample's offline text-rag should have the gold in context and answer wrong twice"
    page.get_by_role("button", name="Open row in Trace").click()
    expect(page.get_by_role("heading", name="Trace", exact=False).first).to_be_visible(timeout=60_000)
    _settle(page)
    page.get_by_role("link", name="Evaluate").click()
    expect(page.get_by_text(f"{count} of 24 runs ·")).to_be_visible(timeout=60_000)

    # label two runs by hand: the agreement figure counts them
    _settle(page)
    expect(page.get_by_text("no labelled run with an automatic verdict yet")).to_be_visible(timeout=30_000)
    for option, verdict in ((0, "wrong"), (1, "right")):
        _choose(page, "Row", option)
        # the picked row's own (empty) label is shown: the row change has been drawn
        expect(page.get_by_role("radio", name="unlabelled")).to_be_checked(timeout=30_000)
        page.get_by_text(verdict, exact=True).first.click()
        expect(page.get_by_role("radio", name=verdict)).to_be_checked(timeout=30_000)
        _settle(page)
        page.get_by_role("button", name="Save label").click()
        expect(page.get_by_text(f"n = {option + 1}, agreement")).to_be_visible(timeout=30_000)
    # every row here is wrong automatically: "wrong" agrees, "right" does not
    expect(page.get_by_text("n = 2, agreement 50%")).to_be_visible()


CLAIM_QUESTION = "Who was born first, Agnes Vohl or Tomas Aldric?"  # offline kg-infused: contradicted


def test_a_clicked_claim_highlights_its_evidence_in_compare_and_in_the_case_file(
    server: str, browser: Browser, page: Page, tmp_path: Path, load_sample: Callable[..., None],
    save_screenshot: Callable[[Page, Path, str], Path],
) -> None:
    """Compare: clicking a contradicted claim shows its source passage with the contradicting span
    marked and draws the cited node with the verdict's border on the overlay; the downloaded case
    file does the same from disk (the claim link opens its evidence and selects the node in the
    overlay frame)."""
    from playwright.sync_api import expect

    page.goto(server)
    load_sample(page)
    page.get_by_role("link", name="Compare").click()
    expect(page.get_by_role("heading", name="Compare methods")).to_be_visible(timeout=30_000)
    q = page.get_by_role("textbox", name="Question", exact=True)
    q.fill(CLAIM_QUESTION)
    q.press("Enter")
    gold = page.get_by_label("Gold answer(s), optional (separate several with |)")
    gold.fill("Tomas Aldric")
    gold.press("Enter")
    _settle(page)
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.get_by_role("heading", name="Claim → evidence")).to_be_visible(timeout=240_000)
    expect(page.locator(".kgviz-evidence")).to_have_count(0)

    page.get_by_text("kg-infused · contradicted", exact=False).first.click()
    span = page.locator(".kgviz-evidence mark.kgviz-span.span-contradicted")
    expect(span).to_be_visible(timeout=60_000)
    expect(span).to_contain_text("1895")
    expect(span.locator("b.kgviz-word").first).to_be_visible()
    expect(page.get_by_text("contradicting span marked", exact=False)).to_be_visible()
    expect(page.get_by_text("Claim → evidence: 1 of the 1 nodes", exact=False)).to_be_visible(timeout=30_000)
    page.locator(".kgviz-evidence").scroll_into_view_if_needed()
    save_screenshot(page, tmp_path, "e2e_claim_evidence.png")
    # the overlay draws the cited node with the contradicted border (#b71c1c), the rest faded
    overlay = next(f for f in page.frames if "vis.Network" in (f.content() if f != page.main_frame else ""))
    overlay.wait_for_function("typeof nodes !== 'undefined' && nodes.length > 0", timeout=30_000)
    borders = overlay.evaluate("nodes.get().map(n => (n.color && n.color.border) || '')")
    assert borders.count("#b71c1c") == 1, borders

    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download case file (HTML)").click()
    case_file = tmp_path / "case.html"
    dl.value.save_as(str(case_file))
    doc = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
    doc.goto(case_file.as_uri())
    frame = next(f for f in doc.frames if f != doc.main_frame)
    frame.wait_for_function("typeof network !== 'undefined' && network", timeout=30_000)
    evidence = doc.locator("section.claim-evidence").filter(has=doc.locator("mark.span-contradicted")).first
    expect(evidence).to_be_hidden()
    anchor = evidence.get_attribute("id")
    doc.locator(f'a.kgviz-claim-link[href="#{anchor}"]').click()
    expect(evidence).to_be_visible()
    frame.wait_for_function("document.body.dataset.kgvizHighlighted", timeout=10_000)
    assert frame.evaluate("network.getSelectedNodes().length") == 1
