"""Every page says when the workspace's last build stopped before its end (the stage it stopped
in), says "running" instead while another session's build holds the lock, and a build that
finishes on the page clears the notice in the same run."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from kgviz.graph.store import GraphStore
from kgviz.index.steps import BUILD_KEY
from tests.support.locks import held_by_another_thread

ROOT = Path(__file__).resolve().parents[2]


def _warnings(at: AppTest) -> list[str]:
    return [str(w.value).replace("\\", "") for w in at.warning]


def test_pages_name_the_stage_an_unfinished_build_stopped_in(app_env: Path) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("pages/build.py").run()
    at.radio[0].set_value("Sample corpus").run()
    next(b for b in at.button if b.label == "Build").click().run()
    assert not at.exception, at.exception
    assert not [w for w in _warnings(at) if "last build of this workspace stopped" in w]
    with GraphStore.open(app_env) as store:  # the state a page left mid-build leaves (a cancel after ket)
        store.set_meta(BUILD_KEY, "ket")
    for page in ("pages/compare.py", "pages/explore.py", "pages/home.py"):
        at.switch_page(page).run()
        assert not at.exception, at.exception
        assert any("last build of this workspace stopped in its ket stage" in w for w in _warnings(at)), (page, _warnings(at))

    at.switch_page("pages/build.py").run()
    at.radio[0].set_value("Sample corpus").run()
    next(b for b in at.button if b.label == "Build").click().run()  # finishes it, on this very run
    assert not at.exception, at.exception
    assert not [w for w in _warnings(at) if "last build of this workspace stopped" in w], _warnings(at)
    assert any("finished an earlier build of this workspace that had stopped in its ket stage" in w
               for w in _warnings(at)), _warnings(at)
    with GraphStore.open(app_env) as store:
        assert store.get_meta(BUILD_KEY) is None


def test_a_build_running_in_another_session_is_not_called_stopped(app_env: Path) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("pages/build.py").run()
    at.radio[0].set_value("Sample corpus").run()
    next(b for b in at.button if b.label == "Build").click().run()
    with GraphStore.open(app_env) as store:
        store.set_meta(BUILD_KEY, "extract")
        with held_by_another_thread(store.build_lock):  # another session's build
            at.switch_page("pages/compare.py").run()
            assert not at.exception, at.exception
            assert any("A build of this workspace is running (now in its extract stage" in str(i.value).replace("\\", "") for i in at.info), [i.value for i in at.info]
            assert not [w for w in _warnings(at) if "last build of this workspace stopped" in w]
