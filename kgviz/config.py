"""Settings: one frozen dataclass built from the environment (or Streamlit secrets at the UI
boundary). Nothing here runs at import time beyond defining the class.

Environment variables (all optional):
  KGVIZ_HOME        base folder for workspaces, cache and price table   (default ~/.kgviz)
  KGVIZ_DB          database directory of the active workspace          (default $KGVIZ_HOME/workspaces/default)
  KGVIZ_LLM         provider spec: offline | anthropic:<model> | openai:<model>
                    | openai-compatible:<model>@<base_url>             (default: auto, see resolve_llm_spec)
  KGVIZ_EMBEDDER    embedder spec: hashing | fastembed:<model> | fastembed:<model>@<dir>  (default hashing)
  KGVIZ_TIMEOUT_S   per-request LLM timeout in seconds    (default 60; 900 for openai-compatible on loopback)
  KGVIZ_MAX_RETRIES retries on 429 / 5xx / timeouts                     (default 3)
  KGVIZ_WORKERS     concurrent extraction workers                       (default 4)
  KGVIZ_MAX_FILE_MB largest accepted upload                             (default 20)
  ANTHROPIC_API_KEY, OPENAI_API_KEY  keys; read when a provider is built, never stored
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from kgviz.errors import ConfigError

DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"
DEFAULT_OPENAI_MODEL = "gpt-5-mini"


@dataclass(frozen=True)
class Settings:
    home: Path
    db_dir: Path
    llm_spec: str = "auto"
    embedder_spec: str = "hashing"
    timeout_s: float | None = None  # None: the provider's default (kgviz.providers.factory.default_timeout_s)
    max_retries: int = 3
    workers: int = 4
    max_file_bytes: int = 20 * 1024 * 1024
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

    def with_(self, **changes: object) -> "Settings":
        return replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        home = Path(env.get("KGVIZ_HOME") or Path.home() / ".kgviz").expanduser()
        db = Path(env.get("KGVIZ_DB") or home / "workspaces" / "default").expanduser()
        try:
            return cls(
                home=home,
                db_dir=db,
                llm_spec=env.get("KGVIZ_LLM", "auto") or "auto",
                embedder_spec=env.get("KGVIZ_EMBEDDER", "hashing") or "hashing",
                timeout_s=float(env["KGVIZ_TIMEOUT_S"]) if env.get("KGVIZ_TIMEOUT_S") else None,
                max_retries=int(env.get("KGVIZ_MAX_RETRIES", 3)),
                workers=int(env.get("KGVIZ_WORKERS", 4)),
                max_file_bytes=int(float(env.get("KGVIZ_MAX_FILE_MB", 20)) * 1024 * 1024),
            )
        except ValueError as exc:
            raise ConfigError(f"invalid numeric setting in the environment: {exc}") from exc


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
