"""Compare end to end in a real browser: `streamlit run app.py` (temp KGVIZ_HOME, offline), Debian
chromium via Playwright. Load the sample, compare every method on a sample question, see one
column per method and the evidence overlay drawn, download the HTML case file and open it from
disk with every network request blocked and recorded (there must be none).

Needs /usr/bin/chromium; skipped otherwise, unless KGVIZ_REQUIRE_BROWSER=1 (then it fails).
Never runs `playwright install`.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from kgviz.methods.registry import list_methods

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 60
WORK_S = 240

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _need_chromium() -> None:
    if CHROMIUM.exists():
        return
    why = "Debian chromium not installed at /usr/bin/chromium (apt-get install chromium)"
    if os.environ.get("KGVIZ_REQUIRE_BROWSER") == "1":
        pytest.fail(f"KGVIZ_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(why)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    port = _port()
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update(KGVIZ_HOME=str(home), KGVIZ_DB=str(home / "workspaces" / "default"), KGVIZ_LLM="offline",
               KGVIZ_EMBEDDER="hashing", KGVIZ_WORKERS="2")
    log = tmp_path / "streamlit.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address",
             "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"streamlit exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"streamlit not healthy after {STARTUP_S}s:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def test_compare_all_methods_overlay_and_offline_case_file(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    methods = list_methods()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                    args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"])
        try:
            context = browser.new_context(viewport={"width": 1500, "height": 1100}, accept_downloads=True)
            page = context.new_page()
            outside: list[str] = []
            page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(
                (server, "data:", "blob:", "about:")) else None)
            page.goto(server)
            page.get_by_role("button", name="Load sample data").click()
            expect(page.get_by_text("Sample built")).to_be_visible(timeout=WORK_S * 1000)

            page.get_by_role("link", name="Compare").click()
            expect(page.get_by_role("heading", name="Compare methods")).to_be_visible(timeout=30_000)
            page.get_by_test_id("stRadioGroup").get_by_text("Sample questions").click()
            compare = page.get_by_role("button", name="Compare", exact=True)
            expect(compare).to_be_enabled(timeout=30_000)
            compare.click()
            for m in methods:  # one column per method, headed by its name
                expect(page.get_by_role("heading", name=m, exact=True)).to_be_visible(timeout=WORK_S * 1000)
            expect(page.locator(".kgviz-verdict")).to_have_count(len(methods), timeout=30_000)
            expect(page.get_by_text("Hallucination = an answer").first).to_be_visible()

            page.screenshot(path=str(tmp_path / "e2e_compare_columns.png"))
            overlay = page.frame_locator("iframe").first
            expect(overlay.locator("#mynetwork canvas")).to_be_visible(timeout=60_000)
            expect(overlay.locator("#kgviz-legend")).to_contain_text("shared by")
            page.locator("iframe").first.scroll_into_view_if_needed()
            page.screenshot(path=str(tmp_path / "e2e_compare.png"), full_page=True)
            shots = os.environ.get("KGVIZ_SCREENSHOT_DIR")
            if shots:
                Path(shots).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(shots) / "e2e_compare.png"), full_page=True)

            with page.expect_download(timeout=60_000) as dl:
                page.get_by_role("button", name="Download case file (HTML)").click()
            case_file = tmp_path / "case.html"
            dl.value.save_as(str(case_file))
            assert outside == [], f"the app fetched external resources: {outside[:5]}"

            # the case file opens from disk with the network cut off, and asks for nothing
            offline = browser.new_context(viewport={"width": 1300, "height": 1000})
            requested: list[str] = []

            def block(route) -> None:  # noqa: ANN001 - playwright Route
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
        finally:
            browser.close()
