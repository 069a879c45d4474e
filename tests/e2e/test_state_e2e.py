"""State that stays, in a real browser: a deep link right after a fresh server start shows kgviz's
own navigation (not Streamlit's legacy page list), a reload keeps the workspace (query parameter),
and page inputs survive a visit to another page. Fixtures: tests/e2e/conftest.py."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e]
NAV = ["Home", "Build", "Explore", "Trace", "Compare", "Evaluate"]


@pytest.fixture
def viewport() -> dict[str, int]:
    return {"width": 1280, "height": 720}


def _nav(page: Page) -> list[str]:
    links = page.locator("[data-testid='stSidebarNav'] a")
    return [t.strip() for t in links.all_inner_texts()]


def test_deep_link_after_a_fresh_start_shows_the_app_navigation(server: str, page: Page) -> None:
    from playwright.sync_api import expect

    page.goto(f"{server}/trace")  # the very first request this server sees
    expect(page.get_by_role("heading", name="Trace a method")).to_be_visible(timeout=60_000)
    expect(page.locator("[data-testid='stSidebarNav'] a").first).to_be_visible(timeout=30_000)
    assert _nav(page) == NAV
    page.reload()
    expect(page.get_by_role("heading", name="Trace a method")).to_be_visible(timeout=60_000)
    assert _nav(page) == NAV


def test_reload_keeps_the_workspace_and_inputs_survive_navigation(server: str, page: Page) -> None:
    from playwright.sync_api import expect

    page.goto(server)
    expect(page.get_by_role("button", name="Load sample data")).to_be_visible(timeout=60_000)
    page.get_by_label("New workspace name").fill("lecture-3")
    page.get_by_role("button", name="Create and switch").click()
    page.wait_for_function("location.search.includes('ws=lecture-3')", timeout=30_000)
    page.reload()
    expect(page.get_by_role("combobox", name="Workspace (database folder)")).to_be_visible(timeout=60_000)
    workspace = page.get_by_role("combobox", name="Workspace (database folder)")
    expect(workspace).to_have_value("workspaces/lecture-3", timeout=30_000)
    assert "ws=lecture-3" in page.url
    # another page of the same workspace
    page.get_by_role("link", name="Trace").click()
    expect(page.get_by_text("This workspace has no entities yet")).to_be_visible(timeout=30_000)
    assert "ws=lecture-3" in page.url  # a page switch keeps the parameter


# the build waits 10 s before its knn stage (a cancel ends the wait): the sample's stages after
# chunk take about a second, so without it the build may end before the page switch stops it
@pytest.mark.parametrize("pauses", ["stage:knn=10"])
def test_leaving_home_during_the_sample_build_is_named_on_the_next_page(server: str, page: Page) -> None:
    """Leaving a page cancels the build running on it: the page the user goes to says the build
    stopped and in which stage (not just a search failing on an index the build never reached),
    and the notice is gone once a build has finished it."""
    from playwright.sync_api import expect

    page.goto(server)
    expect(page.get_by_role("button", name="Load sample data")).to_be_visible(timeout=60_000)
    page.get_by_role("button", name="Load sample data").click()
    # once the chunk stage has reported, the build has begun writing (a click before its first
    # stage cancels it with nothing written: then there is nothing to name)
    expect(page.get_by_text(re.compile(r"^chunk: \d+/\d+"))).to_be_visible(timeout=60_000)
    page.get_by_role("link", name="Compare").click()  # mid-build: the knn stage waits (the pause)
    expect(page.get_by_role("heading", name="Compare methods")).to_be_visible(timeout=60_000)
    # Streamlit starts the new page while the old one still stops its build: "running", then
    # (the page reloads itself when the build ends) the stage it stopped in
    expect(page.get_by_text("The last build of this workspace stopped in its")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("A build of this workspace is running")).to_have_count(0)
    page.get_by_role("link", name="Home").click()
    expect(page.get_by_text("The last build of this workspace stopped in its")).to_be_visible(timeout=60_000)
    page.get_by_role("button", name="Load sample data").click()
    expect(page.get_by_text("Sample built")).to_be_visible(timeout=180_000)
    expect(page.get_by_text("The last build of this workspace stopped in its")).to_have_count(0)
    page.get_by_role("link", name="Compare").click()
    expect(page.get_by_role("heading", name="Compare methods")).to_be_visible(timeout=60_000)
    expect(page.get_by_role("button", name="Compare", exact=True)).to_be_visible(timeout=60_000)
    expect(page.get_by_text("The last build of this workspace stopped in its")).to_have_count(0)
