"""The Build page's Batch API option (issue 29): offered for a hosted model, not offline, and the
estimate shows the batch price (half) next to the interactive one."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def new_app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=120)


def test_offline_has_no_batch_option(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    at.radio[0].set_value("Sample corpus").run()
    assert not at.exception, at.exception
    assert "kgviz_build_batch" not in [c.key for c in at.checkbox]


def test_a_hosted_model_offers_batch_and_shows_its_price(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGVIZ_LLM", "anthropic:claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-test")
    at = new_app().run()
    at.switch_page("pages/build.py").run()
    at.radio[0].set_value("Sample corpus").run()
    assert not at.exception, at.exception
    at.checkbox(key="kgviz_build_batch").check().run()
    assert not at.exception, at.exception
    cost = float(next(m.value for m in at.metric if m.label == "estimated cost").lstrip("$"))
    caption = next(str(c.value) for c in at.caption if "batch API" in str(c.value))
    batch = float(caption.split("$", 1)[1].split(",", 1)[0])
    # the extraction at half price; the skeleton's description calls (on by default) are interactive
    described = float(caption.split("stay interactive ($", 1)[1].split(" ", 1)[0])
    assert cost > 0 and described > 0 and batch == pytest.approx((cost - described) / 2 + described, abs=2e-4)
