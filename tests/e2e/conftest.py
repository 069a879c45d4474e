"""Shared setup for the browser tests.

Browser availability: without /usr/bin/chromium every e2e test skips, unless
KGVIZ_REQUIRE_BROWSER=1 (CI sets it where chromium is installed) turns the skip into a failure,
so a broken browser setup can never pass as "skipped".

Fixtures: `server` (a `streamlit run app.py` on a free loopback port with a temp KGVIZ_HOME,
offline LLM and hashing embedder; its log is attached to the report of a failing test),
`browser` (Debian chromium through Playwright; never `playwright install`), `page` (a fresh
context on `browser`, sized by the overridable `viewport` fixture, recording into `outside`
every request that leaves the app), and the helpers `load_sample`, `save_screenshot` and
`view_settled` (the trace player's pan over, instead of a fixed pause), given as fixtures so test
modules need not import this file.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest
from tests.support.http_wait import wait_healthy

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Frame, Page

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 60
BUILD_S = 180
LAUNCH_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu"]
# what a page may load without it counting as "leaving the app" (besides the app's own URL)
LOCAL_SCHEMES = ("data:", "blob:", "about:")
LOG_TAIL = 3000
_SERVER_LOG = pytest.StashKey[Path]()


_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/e2e is a browser test: mark it ``e2e`` (so ``-m "not e2e"``, the
    quick loop in the README, leaves them out) whether or not its module remembers to. The hook
    sees the whole session's items, hence the path check."""
    for item in items:
        if _HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.e2e)


def browser_missing_reason() -> str | None:
    if CHROMIUM.exists():
        return None
    return (f"Debian chromium not installed at {CHROMIUM} (apt-get install chromium); "
            "this browser test needs it")


@pytest.fixture(autouse=True)
def _require_browser() -> None:
    reason = browser_missing_reason()
    if reason is None:
        return
    if os.environ.get("KGVIZ_REQUIRE_BROWSER") == "1":
        pytest.fail(f"KGVIZ_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _log_tail(log: Path) -> str:
    return log.read_text(errors="replace")[-LOG_TAIL:]


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    state = wait_healthy(f"{url}/_stcore/health", STARTUP_S, exited=lambda: proc.poll() is not None)
    if state == "exited":
        raise AssertionError(f"streamlit exited with {proc.returncode}:\n{_log_tail(log)}")
    if state != "ok":
        raise AssertionError(f"streamlit not healthy after {STARTUP_S}s:\n{_log_tail(log)}")


@pytest.fixture
def pauses() -> str:
    """Deliberate pauses for `server` (tests/e2e/paused_streamlit.py); none unless a test
    parametrizes this name, e.g. ``@pytest.mark.parametrize("pauses", ["stage:knn=8"])``."""
    return ""


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest, pauses: str) -> Iterator[str]:
    """Base URL of a fresh app; the API keys are dropped so nothing can reach a real LLM. With
    `pauses`, the app runs through tests/e2e/paused_streamlit.py (slow on purpose where asked)."""
    port = _free_port()
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update(KGVIZ_HOME=str(home), KGVIZ_DB=str(home / "workspaces" / "default"), KGVIZ_LLM="offline",
               KGVIZ_EMBEDDER="hashing", KGVIZ_WORKERS="2")
    launcher = ["-m", "streamlit"]
    if pauses:
        env["KGVIZ_E2E_PAUSES"] = pauses
        launcher = ["-m", "tests.e2e.paused_streamlit"]
    log = tmp_path / "streamlit.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, *launcher, "run", "app.py", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true",
             "--browser.gatherUsageStats", "false",
             # no file watcher: the tests never edit the source, and watching the checkout (its
             # .venv included) overflowed inotify while pytest and pip churned files; the server
             # then spent most of a core reconciling watches, which slowed every page and let
             # timer-driven UI (the trace page's Play) race the test's clicks
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        request.node.stash[_SERVER_LOG] = log
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    # a browser assertion rarely says why the app misbehaved; the server's log usually does.
    # Startup failures already carry the log in their message, hence only after setup.
    report = yield
    log = item.stash.get(_SERVER_LOG, None)
    if report.failed and report.when != "setup" and log is not None and log.exists():
        report.sections.append(("streamlit log (tail)", _log_tail(log)))
    return report


# One Chromium for the browser tests in a row (starting Playwright's driver and the browser took
# 1-2 s per test): launched by the first test that asks for `browser`, stopped after the last test
# of this folder (before any other test runs: Playwright's sync API keeps an event loop marked
# running in this thread while it is started) and at the end of the session.
_SHARED: dict[str, Any] = {}


def _shared_browser() -> Browser:
    from playwright.sync_api import sync_playwright

    launched = _SHARED.get("browser")
    if launched is not None and launched.is_connected():
        return launched
    _stop_shared_browser()  # a browser that went away (crashed) is replaced
    driver = sync_playwright().start()
    _SHARED["driver"] = driver
    _SHARED["browser"] = driver.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
    return _SHARED["browser"]


def _stop_shared_browser() -> None:
    launched, driver = _SHARED.pop("browser", None), _SHARED.pop("driver", None)
    try:
        if launched is not None and launched.is_connected():
            launched.close()
    finally:
        if driver is not None:
            driver.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    result = yield  # the test's fixtures (its contexts) are torn down first
    if nextitem is None or _HERE not in nextitem.path.resolve().parents:
        _stop_shared_browser()
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    _stop_shared_browser()  # a run stopped early (-x, Ctrl-C) mid-folder


@pytest.fixture
def browser() -> Iterator[Browser]:
    """The shared Chromium; every context the test opened on it (`page`'s, its own) is closed
    after the test, as if the browser had been the test's own."""
    launched = _shared_browser()
    try:
        yield launched
    finally:
        for context in list(launched.contexts):
            context.close()


@pytest.fixture
def viewport() -> dict[str, int]:
    """Size of `page`; a test module overrides this fixture to get another one."""
    return {"width": 1400, "height": 1000}


@pytest.fixture
def outside() -> list[str]:
    """URLs `page` requested outside the app (filled by `page`); a test asserts it stays empty."""
    return []


@pytest.fixture
def page(browser: Browser, server: str, viewport: dict[str, int], outside: list[str]) -> Iterator[Page]:
    context = browser.new_context(viewport=viewport, accept_downloads=True)
    try:
        opened = context.new_page()
        opened.on("request", lambda r: outside.append(r.url) if not r.url.startswith(
            (server, *LOCAL_SCHEMES)) else None)
        yield opened
    finally:
        context.close()


def _load_sample(page: Page, timeout_s: float = BUILD_S) -> None:
    """Home's "Load sample data" button, then wait for the build to report success."""
    from playwright.sync_api import expect

    page.get_by_role("button", name="Load sample data").click()
    expect(page.get_by_text("Sample built")).to_be_visible(timeout=timeout_s * 1000)


def _save_screenshot(page: Page, tmp_path: Path, name: str) -> Path:
    """Full-page shot into tmp_path, copied to $KGVIZ_SCREENSHOT_DIR when set (to look at later)."""
    shot = tmp_path / name
    page.screenshot(path=str(shot), full_page=True)
    extra = os.environ.get("KGVIZ_SCREENSHOT_DIR")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(extra) / name)
    return shot


# the trace player's view (position and zoom) unchanged over this many animation frames in a row:
# vis-network moves a panning view on every frame until the pan ends, so the pan is over (or there
# was none). Counted in frames, not milliseconds: a loaded machine draws fewer frames per second.
SETTLED_FRAMES = 3
_SETTLED_JS = """(frames) => { const n = window.kgvizPlayer.network, p = n.getViewPosition();
  const now = [p.x, p.y, n.getScale()].join(' '), w = window.kgvizSettle;
  w.same = now === w.last ? w.same + 1 : 0; w.last = now; return w.same >= frames; }"""


def _view_settled(frame: Frame, timeout_ms: float = 30_000) -> None:
    """Wait until the trace player's pan has ended: the view is the same on SETTLED_FRAMES
    consecutive animation frames (polled once per frame)."""
    frame.evaluate("window.kgvizSettle = {last: null, same: 0}")
    frame.wait_for_function(_SETTLED_JS, arg=SETTLED_FRAMES, polling="raf", timeout=timeout_ms)


@pytest.fixture
def view_settled() -> Callable[..., None]:
    return _view_settled


@pytest.fixture
def load_sample() -> Callable[..., None]:
    return _load_sample


@pytest.fixture
def save_screenshot() -> Callable[[Page, Path, str], Path]:
    return _save_screenshot
