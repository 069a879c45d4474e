"""State that stays, in a real browser: a deep link right after a fresh server start shows kgviz's
own navigation (not Streamlit's legacy page list), a reload keeps the workspace (query parameter),
and page inputs survive a visit to another page. Fixtures: tests/e2e/conftest.py."""
from __future__ import annotations

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
