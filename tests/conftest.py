"""Fixtures shared by test folders (tests/app has its own conftest for AppTest)."""
from __future__ import annotations

from pathlib import Path

import pytest

# settings a developer's shell may hold that would change what the CLI does under test
_OUTSIDE_SETTINGS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KGVIZ_LLM", "KGVIZ_EMBEDDER", "KGVIZ_DB",
                     "KGVIZ_TIMEOUT_S", "KGVIZ_MAX_RETRIES", "KGVIZ_WORKERS", "KGVIZ_MAX_FILE_MB",
                     "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CLI environment of its own: KGVIZ_HOME under ``tmp_path`` (returned), no keys, no
    provider or database settings and no proxies from the outside shell."""
    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    for key in _OUTSIDE_SETTINGS:
        monkeypatch.delenv(key, raising=False)
    return tmp_path
