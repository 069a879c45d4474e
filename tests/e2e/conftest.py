"""Browser availability for every e2e test: without /usr/bin/chromium the tests skip, unless
KGVIZ_REQUIRE_BROWSER=1 (CI sets it where chromium is installed) turns the skip into a failure,
so a broken browser setup can never pass as "skipped"."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")


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
