"""Results know where they came from, in a real browser (issue 22, point 5): Home's offline /
recorded choice lands in its own workspace and embedder both ways; after a build report, a
comparison and an evaluation, a switch of LLM and then of workspace leaves no old result drawn
without its label on Build, Compare or Evaluate; "Switch back" brings the result back.

Needs /usr/bin/chromium (skipped otherwise, unless KGVIZ_REQUIRE_BROWSER=1). Server: offline,
hashing embedder, temp KGVIZ_HOME (tests/e2e/conftest.py).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from kgviz.methods.registry import list_methods
from kgviz.ui.state import LLM_PRESETS

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.e2e
WORK_S = 240
ANTHROPIC = LLM_PRESETS[1]
IDLE = "!document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]')"
# what each page draws only for a result: a heading of the result itself
RESULT_HEADINGS = {"Build": ["Build report"], "Compare": ["Evidence overlay", "text-rag"], "Evaluate": ["Results"]}
WHAT = {"Build": "build report", "Compare": "comparison", "Evaluate": "evaluation"}


@pytest.fixture
def viewport() -> dict[str, int]:
    return {"width": 1400, "height": 1000}


def _idle(page: Page) -> None:
    page.wait_for_timeout(300)  # let a rerun that a click started begin
    page.wait_for_function(IDLE, timeout=WORK_S * 1000)


def _open(page: Page, name: str, heading: str) -> None:
    from playwright.sync_api import expect

    page.get_by_role("link", name=name).click()
    expect(page.get_by_role("heading", name=heading, level=1)).to_be_visible(timeout=60_000)
    _idle(page)


def _sidebar(page: Page) -> dict[str, str]:
    side = page.get_by_test_id("stSidebar")
    values = {"workspace": side.get_by_role("combobox", name="Workspace (database folder)").input_value(),
              "llm": side.get_by_role("combobox", name="LLM").input_value(),
              "embedder": side.get_by_role("textbox", name="Embedder", exact=True).input_value()}
    spec = side.get_by_role("textbox", name="Provider spec", exact=True)
    values["spec"] = spec.input_value() if spec.count() else ""
    return values


def _choose(page: Page, combobox: str, option: str) -> None:
    page.get_by_test_id("stSidebar").get_by_role("combobox", name=combobox).click()
    page.get_by_role("option", name=option, exact=True).click()
    _idle(page)


def _load_sample(page: Page, replies: str) -> None:
    from playwright.sync_api import expect

    page.get_by_test_id("stRadioGroup").get_by_text(replies).click()
    _idle(page)
    page.get_by_role("button", name="Load sample data").click()
    expect(page.get_by_text("Sample built")).to_be_visible(timeout=WORK_S * 1000)
    _idle(page)


def _only_method(page: Page, keep: str) -> None:
    """Untick every Compare method but ``keep``, one at a time, each checked after its rerun has
    settled (a click landing during a rerun can be undone by it, and is then tried again)."""
    from playwright.sync_api import expect

    ticked: list[str] = []
    for _ in range(3 * len(list_methods())):
        ticked = [m for m in list_methods() if m != keep
                  and page.get_by_role("checkbox", name=m, exact=True).is_checked()]
        if not ticked:
            return
        _idle(page)
        page.get_by_test_id("stCheckbox").filter(has_text=ticked[0]).get_by_text(ticked[0], exact=True).click()
        expect(page.get_by_role("checkbox", name=ticked[0], exact=True)).not_to_be_checked(timeout=10_000)
        _idle(page)
    raise AssertionError(f"still ticked: {ticked}")


def _shown_results(page: Page, name: str) -> list[str]:
    return [h for h in RESULT_HEADINGS[name] if page.get_by_role("heading", name=h, exact=True).count()]


def _assert_labelled(page: Page, name: str, *, stale_because: str) -> None:
    """The page draws none of its result, and says whose it was and what changed."""
    from playwright.sync_api import expect

    warning = page.get_by_text(f"Your last {WHAT[name]} is from workspace default")
    expect(warning).to_be_visible(timeout=30_000)
    expect(warning).to_contain_text(stale_because)
    expect(warning).to_contain_text("so it is not shown")
    for heading in RESULT_HEADINGS[name]:  # waited for: a rerun removes the last run's elements at its end
        expect(page.get_by_role("heading", name=heading, exact=True)).to_have_count(0, timeout=30_000)
    expect(page.get_by_role("button", name="Switch back to default / offline")).to_be_visible()


def test_home_round_trip_and_no_unlabelled_old_result_after_a_switch(
    server: str, page: Page, outside: list[str], tmp_path: Path,
    save_screenshot: Callable[[Page, Path, str], Path],
) -> None:
    from playwright.sync_api import expect

    page.goto(server)
    expect(page.get_by_role("heading", name="kgviz", level=1)).to_be_visible(timeout=60_000)
    _idle(page)
    default = {"workspace": "workspaces/default", "llm": "offline", "embedder": "hashing", "spec": ""}
    assert _sidebar(page) == default

    # Home: offline -> recorded -> offline, each in its own workspace with its own embedder
    _load_sample(page, "offline heuristics")
    assert _sidebar(page) == default
    _load_sample(page, "recorded from")
    recorded = _sidebar(page)
    assert recorded["workspace"] == "workspaces/sample-recorded" and recorded["embedder"] == "hashing"
    assert recorded["llm"] == "other (type a spec)" and recorded["spec"].startswith("recorded:")
    expect(page.get_by_text("Sample built: 15 new documents")).to_be_visible()
    _load_sample(page, "offline heuristics")
    assert _sidebar(page) == default  # not offline heuristics over the recorded model's graph
    expect(page.get_by_text("Sample built: 0 new documents")).to_be_visible()  # the offline graph is there

    # a result on each page, labelled with where it came from
    _open(page, "Build", "Build the graph")
    expect(page.get_by_role("heading", name="Build report")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("This build report is from workspace default · LLM offline")).to_be_visible()

    _open(page, "Compare", "Compare methods")
    _only_method(page, "text-rag")
    page.get_by_role("textbox", name="Question", exact=True).fill("In what year was the Tidewell Line founded?")
    page.get_by_role("textbox", name="Question", exact=True).press("Enter")
    _idle(page)
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.get_by_role("heading", name="Evidence overlay")).to_be_visible(timeout=WORK_S * 1000)
    expect(page.get_by_text("This comparison is from workspace default · LLM offline")).to_be_visible()
    assert [m for m in list_methods() if page.get_by_role("heading", name=m, exact=True).count()] == ["text-rag"]
    with page.expect_download(timeout=60_000) as dl:  # named by the question and the time, not one fixed name
        page.get_by_role("button", name="Download JSON").click()
    assert re.fullmatch(r"kgviz_comparison_in-what-year-was-the-tidewell-line-founded_\d{8}-\d{6}\.json",
                        dl.value.suggested_filename), dl.value.suggested_filename

    _open(page, "Evaluate", "Evaluate methods")
    from test_evaluate_e2e import _remove_methods

    _remove_methods(page, [m for m in list_methods() if m != "text-rag"])
    limit = page.get_by_label("Questions (first N)")
    limit.fill("2")
    limit.press("Enter")
    _idle(page)
    page.get_by_text("Add the BM25-only and dense-only baselines").click()
    expect(page.get_by_text("2 questions × 1 methods = 2 runs")).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Run evaluation").click()
    expect(page.get_by_role("heading", name="Results")).to_be_visible(timeout=WORK_S * 1000)
    expect(page.get_by_text("This evaluation is from workspace default · LLM offline")).to_be_visible()

    # another LLM: every page hides what the old one made, and says so
    _choose(page, "LLM", ANTHROPIC)
    for name, heading in (("Evaluate", "Evaluate methods"), ("Build", "Build the graph"),
                          ("Compare", "Compare methods")):
        _open(page, name, heading)
        _assert_labelled(page, name, stale_because=f"LLM offline → {ANTHROPIC}")
    save_screenshot(page, tmp_path, "e2e_stale_compare.png")
    page.get_by_role("button", name="Switch back to default / offline").click()
    expect(page.get_by_role("heading", name="Evidence overlay")).to_be_visible(timeout=60_000)
    _idle(page)
    assert _sidebar(page) == default

    # another workspace that has a graph (the recorded sample's): the same
    _choose(page, "Workspace (database folder)", "workspaces/sample-recorded")
    for name, heading in (("Compare", "Compare methods"), ("Evaluate", "Evaluate methods"),
                          ("Build", "Build the graph")):
        _open(page, name, heading)
        _assert_labelled(page, name, stale_because="workspace default → sample-recorded")

    # a new, empty workspace: no old build report passed off as this one's
    _open(page, "Home", "kgviz")
    page.get_by_label("New workspace name").fill("empty-ws")
    page.get_by_role("button", name="Create and switch").click()
    page.wait_for_function("location.search.includes('ws=empty-ws')", timeout=30_000)
    _open(page, "Build", "Build the graph")
    _assert_labelled(page, "Build", stale_because="workspace default → empty-ws")
    assert page.get_by_text("already in the workspace").count() == 0
    for name, heading in (("Compare", "Compare methods"), ("Evaluate", "Evaluate methods")):
        _open(page, name, heading)
        expect(page.get_by_text("This workspace has no graph yet")).to_be_visible()
        assert _shown_results(page, name) == []
    assert outside == [], f"the app fetched external resources: {outside[:5]}"
