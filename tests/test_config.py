"""Settings.from_env: every KGVIZ_* value is checked at load, with one line naming the variable and
what is allowed, and nothing is created on disk."""
from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from kgviz.config import Settings, check_dir_path
from kgviz.errors import ConfigError


def env_with(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"KGVIZ_HOME": str(tmp_path / "home"), **values}


def test_defaults_and_valid_values(tmp_path: Path) -> None:
    s = Settings.from_env(env_with(tmp_path))
    # timeout unset: None, so the provider picks its default (60 s, 900 s for a loopback server)
    assert (s.timeout_s, s.max_retries, s.workers, s.max_file_bytes) == (None, 3, 4, 20_000_000)
    assert s.db_dir == tmp_path / "home" / "workspaces" / "default"
    s = Settings.from_env(env_with(tmp_path, KGVIZ_TIMEOUT_S=" 0.5 ", KGVIZ_MAX_RETRIES="0", KGVIZ_WORKERS="64",
                                   KGVIZ_MAX_FILE_MB="1.5", KGVIZ_LLM="openai-compatible:m@http://127.0.0.1:9/v1",
                                   KGVIZ_EMBEDDER="hashing:32"))
    assert (s.timeout_s, s.max_retries, s.workers) == (0.5, 0, 64)
    assert s.max_file_bytes == 1_500_000
    assert s.embedder_spec == "hashing:32"
    # an empty variable means "not set"
    assert Settings.from_env(env_with(tmp_path, KGVIZ_WORKERS="", KGVIZ_LLM="")).workers == 4
    assert not (tmp_path / "home").exists()  # loading settings creates nothing


# (variable, value, the one-line message: whole, or with * where only a fragment is pinned)
BAD_SETTINGS = [
    ("KGVIZ_MAX_RETRIES", "-1", "KGVIZ_MAX_RETRIES=-1 is out of range: must be a whole number from 0 to 10"),
    ("KGVIZ_MAX_RETRIES", "2.5", "KGVIZ_MAX_RETRIES='2.5' is not a whole number: must be a whole number from 0 to 10"),
    ("KGVIZ_TIMEOUT_S", "-5", "KGVIZ_TIMEOUT_S=-5 is out of range: must be a number from 0.1 to 3600"),
    ("KGVIZ_TIMEOUT_S", "nan", "KGVIZ_TIMEOUT_S=nan is out of range: must be a number from 0.1 to 3600"),
    ("KGVIZ_TIMEOUT_S", "soon", "KGVIZ_TIMEOUT_S='soon' is not a number: must be a number from 0.1 to 3600"),
    ("KGVIZ_WORKERS", "0", "KGVIZ_WORKERS=0 is out of range: must be a whole number from 1 to 64"),
    ("KGVIZ_WORKERS", "four", "KGVIZ_WORKERS='four' is not a whole number: must be a whole number from 1 to 64"),
    ("KGVIZ_MAX_FILE_MB", "0", "KGVIZ_MAX_FILE_MB=0 is out of range: must be a number from 0.001 to 2048"),
    ("KGVIZ_MAX_FILE_MB", "inf", "KGVIZ_MAX_FILE_MB=inf is out of range: must be a number from 0.001 to 2048"),
    ("KGVIZ_BUFFER_POOL_MB", "100", "KGVIZ_BUFFER_POOL_MB=100 is out of range: must be a whole number from 256 to 65536"),
    ("KGVIZ_BUFFER_POOL_MB", "2.5", "KGVIZ_BUFFER_POOL_MB='2.5' is not a whole number: *"),
    ("KGVIZ_LLM", "gemini:pro", "KGVIZ_LLM='gemini:pro': *unknown LLM spec*"),
    ("KGVIZ_LLM", "openai-compatible:m", "KGVIZ_LLM='openai-compatible:m': *base URL*"),
    ("KGVIZ_EMBEDDER", "hashing:3", "KGVIZ_EMBEDDER='hashing:3': *16 to 65536*"),
    ("KGVIZ_EMBEDDER", "word2vec", "KGVIZ_EMBEDDER='word2vec': *unknown embedder spec*"),
]


@pytest.mark.parametrize("name, value, expected", BAD_SETTINGS)
def test_bad_settings_name_the_variable(tmp_path: Path, name: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env_with(tmp_path, **{name: value}))
    assert fnmatchcase(str(info.value), expected), str(info.value)
    assert "\n" not in info.value.user_message()


def test_home_under_a_file_and_db_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "plain.txt"
    blocker.write_text("x")
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"KGVIZ_HOME": str(blocker / "kgviz")})
    assert str(info.value) == (f"KGVIZ_HOME={blocker / 'kgviz'} is under a file ({blocker}): "
                               "it must be a folder (or a path where one can be created)")
    with pytest.raises(ConfigError, match=r"^KGVIZ_DB=.*plain\.txt is a file"):
        Settings.from_env(env_with(tmp_path, KGVIZ_DB=str(blocker)))
    # the default database path lies under KGVIZ_HOME: a file there is caught too
    home = tmp_path / "home2"
    home.mkdir()
    (home / "workspaces").write_text("not a folder")
    with pytest.raises(ConfigError, match="KGVIZ_DB="):
        Settings.from_env({"KGVIZ_HOME": str(home)})


def test_check_dir_path_accepts_folders_and_creatable_paths(tmp_path: Path) -> None:
    assert check_dir_path(tmp_path, "X") == tmp_path
    assert check_dir_path(tmp_path / "a" / "b", "X") == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()




def test_databases_open_with_the_configured_buffer_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgviz.graph import store as store_module
    from kgviz.graph.store import GraphStore

    sizes: list[int] = []
    real = store_module.kuzu.Database

    def spy(*args: object, **kwargs: object) -> object:
        sizes.append(int(kwargs["buffer_pool_size"]))  # type: ignore[call-overload]
        return real(*args, **kwargs)

    monkeypatch.setattr(store_module.kuzu, "Database", spy)
    monkeypatch.delenv("KGVIZ_BUFFER_POOL_MB", raising=False)
    with GraphStore.open(tmp_path / "a", embedder_id="e", dim=8):
        pass
    monkeypatch.setenv("KGVIZ_BUFFER_POOL_MB", "512")
    with GraphStore.open(tmp_path / "b", embedder_id="e", dim=8):
        pass
    assert sizes == [2048 << 20, 512 << 20]
