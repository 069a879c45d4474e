"""The Streamlit config: the file watcher cannot be flooded by a virtualenv inside the checkout,
the uploader's limit is kgviz's own, and no full garbage collection after each run."""
from __future__ import annotations

import tomllib
from pathlib import Path

from kgviz.config import Settings

CONFIG = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"


def _server() -> dict:
    return tomllib.loads(CONFIG.read_text(encoding="utf-8"))["server"]


def test_watcher_is_not_a_recursive_inotify_watch_and_skips_the_venv() -> None:
    server = _server()
    # "auto"/"watchdog" schedule a recursive inotify watch on the whole checkout (venv included)
    assert server["fileWatcherType"] in ("poll", "none")
    assert {".venv", "venv"} <= set(server["folderWatchBlacklist"])


def test_upload_limit_matches_kgviz_limit(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("KGVIZ_MAX_FILE_MB", raising=False)
    # Streamlit's uploader refuses files over maxUploadSize x 1,000,000 bytes in the browser (x 1,048,576
    # on Windows); kgviz's loader applies the same byte limit to uploads and to the CLI's files
    assert _server()["maxUploadSize"] * 1_000_000 == Settings.from_env().max_file_bytes == 20_000_000


def test_streamlit_accepts_every_option() -> None:
    from streamlit import config

    known = set(config._config_options_template)
    data = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    unknown = [f"{s}.{k}" for s, opts in data.items() for k in opts if f"{s}.{k}" not in known]
    assert unknown == []


def test_no_full_collection_after_every_script_run() -> None:
    """Streamlit's default gc.collect() after each run held the GIL for every session (issue 28.6);
    the option must be the one Streamlit reads, and off."""
    from streamlit import config

    runner = tomllib.loads(CONFIG.read_text(encoding="utf-8"))["runner"]
    assert runner["postScriptGC"] is False
    assert config._config_options_template["runner.postScriptGC"].default_val is True  # so the line matters
