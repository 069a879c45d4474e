"""Settings: one frozen dataclass built from the environment (or Streamlit secrets at the UI
boundary). Nothing here runs at import time beyond defining the class.

Environment variables (all optional):
  KGVIZ_HOME        base folder for workspaces, cache and price table   (default ~/.kgviz)
  KGVIZ_DB          database directory of the active workspace          (default $KGVIZ_HOME/workspaces/default)
  KGVIZ_LLM         provider spec: offline | anthropic:<model> | openai:<model>
                    | openai-compatible:<model>@<base_url>             (default: auto, see resolve_llm_spec)
  KGVIZ_EMBEDDER    embedder spec: auto | hashing | hashing:<dim> | fastembed:<model> | fastembed:<model>@<dir>
                    (default auto: a local fastembed model if one loads within 20 s, else hashing
                    with a notice saying why; kgviz.providers.embedder_auto, its settings in
                    kgviz.provider_specs)
  KGVIZ_EMBEDDER_DIR    for auto: a local fastembed model directory, the only place auto then tries
                        (scripts/make_minilm_dir.py DIR builds one)
  KGVIZ_EMBEDDER_MODEL  for auto: the model in KGVIZ_EMBEDDER_DIR (default sentence-transformers/all-MiniLM-L6-v2)
  FASTEMBED_CACHE_PATH  fastembed's cache, where auto looks when KGVIZ_EMBEDDER_DIR is not set
  KGVIZ_TIMEOUT_S   per-request LLM timeout in seconds, 0.1-3600  (default 60; 900 for openai-compatible on loopback)
  KGVIZ_MAX_RETRIES retries on 429 / 5xx / timeouts, 0-10               (default 3)
  KGVIZ_WORKERS     concurrent extraction workers, 1-64                 (default 4); offline, the
                    worker processes of a large build, at most one per core (1: none)
  KGVIZ_MAX_FILE_MB largest accepted file in MB of 1,000,000 bytes, 0.001-2048 (default 20)
  KGVIZ_BUFFER_POOL_MB  Kùzu's buffer pool per database in MiB, 256-65536 (default 2048); a build
                    of ~100,000 passages needs more (README "Large corpora")
  ANTHROPIC_API_KEY, OPENAI_API_KEY  keys; read when a provider is built, never stored
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from kgviz.errors import ConfigError
from kgviz.provider_specs import AUTO_SPEC, AutoEmbedderParams, parse_embedder_spec, parse_llm_spec

DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"
DEFAULT_OPENAI_MODEL = "gpt-5-mini"


# KGVIZ_MAX_FILE_MB counts megabytes of 1,000,000 bytes, as the app's uploader does (Streamlit's
# browser side turns server.maxUploadSize = 20 into 20,000,000 bytes, except on Windows), so the
# app and the CLI accept exactly the same files (issue 28: 20,000,000 vs 20 x 1,048,576 bytes).
BYTES_PER_MB = 1_000_000


@dataclass(frozen=True)
class Settings:
    home: Path
    db_dir: Path
    llm_spec: str = "auto"
    embedder_spec: str = AUTO_SPEC
    auto_embedder: AutoEmbedderParams = AutoEmbedderParams()  # where ``auto`` looks (frozen, so shareable)
    timeout_s: float | None = None  # None: the provider's default (kgviz.providers.factory.default_timeout_s)
    max_retries: int = 3
    workers: int = 4
    max_file_bytes: int = 20 * BYTES_PER_MB
    chunk_tokens: int = 300
    chunk_overlap: int = 30

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def price_table_path(self) -> Path:
        return self.home / "prices.json"

    @property
    def workspaces_dir(self) -> Path:
        return self.home / "workspaces"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        """Read and validate every KGVIZ_* variable. A bad value raises ConfigError with one line
        naming the variable, the value and the allowed range. Nothing is created on disk: the
        folders are only checked to be creatable (no file stands where a folder must go)."""
        env = os.environ if env is None else env
        home = check_dir_path(Path(_text(env, "KGVIZ_HOME") or Path.home() / ".kgviz").expanduser(), "KGVIZ_HOME")
        db = check_dir_path(Path(_text(env, "KGVIZ_DB") or home / "workspaces" / "default").expanduser(), "KGVIZ_DB")
        llm_spec = _text(env, "KGVIZ_LLM") or "auto"
        embedder_spec = _text(env, "KGVIZ_EMBEDDER") or AUTO_SPEC
        _check_specs(llm_spec, embedder_spec)
        buffer_pool_bytes(env)  # checked here too, so a bad value fails before anything opens
        return cls(
            home=home,
            db_dir=db,
            llm_spec=llm_spec,
            embedder_spec=embedder_spec,
            auto_embedder=AutoEmbedderParams.from_env(env),
            # unset: None, the provider picks (60 s, or 900 s for a local server on loopback)
            timeout_s=_number(env, "KGVIZ_TIMEOUT_S", None, *TIMEOUT_RANGE),
            max_retries=int(_number(env, "KGVIZ_MAX_RETRIES", 3, *RETRIES_RANGE, whole=True) or 0),
            workers=int(_number(env, "KGVIZ_WORKERS", 4, *WORKERS_RANGE, whole=True) or 4),
            max_file_bytes=int((_number(env, "KGVIZ_MAX_FILE_MB", 20.0, *FILE_MB_RANGE) or 20.0) * BYTES_PER_MB),
        )


# Allowed ranges (ours). Upper bounds catch typos (a timeout of 60000 s, 500 workers) that would
# otherwise look like a hang or exhaust the provider's rate limit.
TIMEOUT_RANGE = (0.1, 3600.0)
RETRIES_RANGE = (0, 10)
WORKERS_RANGE = (1, 64)
FILE_MB_RANGE = (0.001, 2048.0)
# Kùzu's default pool is 80 % of RAM per database; a bounded one keeps several workspaces (and a
# build beside the app) within the machine. 2 GiB holds every build up to ~30,000 passages; a
# bulk load into a rel table that already holds many edges needs pool pages in proportion to the
# edges' stored text, and the 100k-passage build's provenance edges filled 2 GiB.
BUFFER_POOL_MB_RANGE = (256, 65536)
DEFAULT_BUFFER_POOL_MB = 2048


def buffer_pool_bytes(env: Mapping[str, str] | None = None) -> int:
    """KGVIZ_BUFFER_POOL_MB in bytes (ConfigError when it is not a whole number in range). Read
    by GraphStore when it opens a database file, so a script that never builds Settings gets it too."""
    env = os.environ if env is None else env
    mb = _number(env, "KGVIZ_BUFFER_POOL_MB", DEFAULT_BUFFER_POOL_MB, *BUFFER_POOL_MB_RANGE, whole=True)
    return int(mb or DEFAULT_BUFFER_POOL_MB) << 20


def _text(env: Mapping[str, str], name: str) -> str:
    return (env.get(name) or "").strip()


def _number(env: Mapping[str, str], name: str, default: float | None, low: float, high: float, *,
            whole: bool = False) -> float | None:
    raw = _text(env, name)
    if not raw:
        return default
    kind = "a whole number" if whole else "a number"
    allowed = f"must be {kind} from {low:g} to {high:g}"
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not {kind}: {allowed}") from None
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"{name}={raw} is out of range: {allowed}")
    return value


def check_dir_path(path: Path, name: str) -> Path:
    """``path`` unchanged when a folder can exist there: it is a folder, or its nearest existing
    ancestor is one. Raises ConfigError (naming ``name``: a variable or an option) otherwise.
    Checked before anything is created, so a bad setting leaves nothing behind."""
    probe = path
    try:
        while not probe.exists():
            if probe.parent == probe:
                return path
            probe = probe.parent
    except OSError as exc:  # e.g. a parent folder kgviz may not read
        raise ConfigError(f"{name}={path} cannot be used: {exc.strerror or exc}") from None
    if not probe.is_dir():
        where = "is a file" if probe == path else f"is under a file ({probe})"
        raise ConfigError(f"{name}={path} {where}: it must be a folder (or a path where one can be created)")
    return path


def _check_specs(llm_spec: str, embedder_spec: str) -> None:
    for name, spec, parse in (("KGVIZ_LLM", llm_spec, parse_llm_spec),
                              ("KGVIZ_EMBEDDER", embedder_spec, parse_embedder_spec)):
        if name == "KGVIZ_LLM" and spec == "auto":
            continue
        try:
            parse(spec)
        except ConfigError as exc:
            raise ConfigError(f"{name}={spec!r}: {exc}", hint=exc.hint) from None


def resolve_llm_spec(spec: str, env: Mapping[str, str] | None = None) -> str:
    """'auto' picks Anthropic if ANTHROPIC_API_KEY is set, else OpenAI if OPENAI_API_KEY is set,
    else the offline mode. Any other spec is returned unchanged."""
    env = os.environ if env is None else env
    if spec != "auto":
        return spec
    if env.get("ANTHROPIC_API_KEY"):
        return f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"
    if env.get("OPENAI_API_KEY"):
        return f"openai:{DEFAULT_OPENAI_MODEL}"
    return "offline"
