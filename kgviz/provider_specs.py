"""Provider settings as data: the parsing of the provider spec strings (``KGVIZ_LLM``,
``KGVIZ_EMBEDDER``, ``--llm``, ``--embedder``), the defaults a spec fills in, and where the
``auto`` embedder spec looks (``AutoEmbedderParams``, read from the environment).

Nothing here builds a provider. ``kgviz.config`` validates and holds these settings and
``kgviz.providers`` builds from them (``factory``, ``embedder_auto``, ``embedders``, ``offline``
read the defaults here); this module imports only ``kgviz.errors``, so ``config`` sits below
``providers`` and neither imports the other back.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from kgviz.errors import ConfigError

OFFLINE_MODEL = "heuristics"  # the model name of the offline mode (kgviz.providers.offline.OfflineLLM)
DEFAULT_HASH_DIM = 768  # kgviz.providers.embedders.HashingEmbedder
DEFAULT_FASTEMBED_MODEL = "BAAI/bge-small-en-v1.5"  # kgviz.providers.embedders.FastEmbedEmbedder

# --- the ``auto`` embedder spec (resolved by kgviz.providers.embedder_auto) -------------------
AUTO_SPEC = "auto"
# ours: all-MiniLM-L6-v2 int8 loads in ~1.5 s on a busy 2-core VM; 20 s leaves room for a slow disk
# and a loaded machine, yet an app start never waits longer than this for a model.
AUTO_LOAD_TIMEOUT_S = 20.0
DIR_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DIR_VAR, MODEL_VAR, CACHE_VAR = "KGVIZ_EMBEDDER_DIR", "KGVIZ_EMBEDDER_MODEL", "FASTEMBED_CACHE_PATH"
# ``kgviz models pull`` (kgviz.providers.model_pull) writes under KGVIZ_HOME/models: the registry
# route's model directory and the hub route's fastembed cache; ``auto`` looks in both.
PULLED_DIR_NAME, PULLED_CACHE_NAME = "all-MiniLM-L6-v2", "fastembed_cache"
# A variant kgviz makes locally from a model directory (kgviz.providers.int8_activations): its
# matrix products in integers. Named after the model it was made from, ``<model>+int8-activations``,
# in specs (fastembed:<model>+int8-activations@<dir>), ids and directory names alike.
INT8_ACTIVATIONS = "int8-activations"
# The same integer products with the encoder's attention, GELU and layer norms rewritten into
# onnxruntime's fused CPU kernels (kgviz.providers.encoder_fusion): its vectors differ from the
# int8-activations variant's beyond float noise (the run-time 8-bit rounding meets other inputs),
# so it is an embedder of its own, ``<model>+int8-fused``.
INT8_FUSED = "int8-fused"
VARIANT_SEP = "+"
VARIANTS = (INT8_ACTIVATIONS, INT8_FUSED)


def split_variant(model: str) -> tuple[str, str | None]:
    """``"<model>+int8-activations"`` -> (model, "int8-activations"), likewise ``+int8-fused``; any
    other name -> (name, None)."""
    base, sep, variant = model.rpartition(VARIANT_SEP)
    if sep and base and variant in VARIANTS:
        return base, variant
    return model, None


def variant_name(model: str, variant: str = INT8_ACTIVATIONS) -> str:
    return f"{model}{VARIANT_SEP}{variant}"


@dataclass(frozen=True)
class AutoEmbedderParams:
    """Where the ``auto`` spec looks for a model and how long it may take."""

    model_dir: Path | None = None
    """KGVIZ_EMBEDDER_DIR: a fastembed-loadable model directory; when set, the only place tried."""
    model: str = DIR_MODEL
    """KGVIZ_EMBEDDER_MODEL: the fastembed model name of what ``model_dir`` holds."""
    cache_dir: Path | None = None
    """FASTEMBED_CACHE_PATH; None: fastembed's default, ``<tmp>/fastembed_cache``."""
    timeout_s: float = AUTO_LOAD_TIMEOUT_S
    """One budget for every load tried (ours, see AUTO_LOAD_TIMEOUT_S)."""
    pulled_dir: Path | None = None
    """KGVIZ_HOME/models: where ``kgviz models pull`` puts a model (None: not looked at)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "AutoEmbedderParams":
        env = os.environ if env is None else env
        directory = (env.get(DIR_VAR) or "").strip()
        cache = (env.get(CACHE_VAR) or "").strip()
        home = Path((env.get("KGVIZ_HOME") or "").strip() or Path.home() / ".kgviz").expanduser()
        return cls(model_dir=Path(directory).expanduser() if directory else None,
                   model=(env.get(MODEL_VAR) or "").strip() or DIR_MODEL,
                   cache_dir=Path(cache).expanduser() if cache else None,
                   pulled_dir=home / "models")

    def cache(self) -> Path:
        return self.cache_dir or Path(tempfile.gettempdir()) / "fastembed_cache"


# --- spec parsing ----------------------------------------------------------------------------
LLM_KINDS = ("offline", "anthropic", "openai", "openai-compatible", "recorded")
_SPEC_HELP = (
    "use offline, anthropic:<model>, openai:<model>, openai-compatible:<model>@<base_url> "
    "(e.g. openai-compatible:llama3.1:8b@http://localhost:11434/v1) or recorded:<recording file or folder>"
)


def parse_llm_spec(spec: str) -> tuple[str, str, str | None]:
    """-> (kind, model, base_url or None). Raises ConfigError on anything else ("auto" included:
    resolve it first)."""
    s = (spec or "").strip()
    if s == "offline":
        return "offline", OFFLINE_MODEL, None
    kind, sep, rest = s.partition(":")
    if not sep or kind not in LLM_KINDS or kind == "offline":
        raise ConfigError(f"unknown LLM spec {spec!r}", hint=_SPEC_HELP)
    if kind == "recorded":  # the rest is a path, which may hold '@'
        if not rest.strip():
            raise ConfigError(f"LLM spec {spec!r} names no recording", hint=_SPEC_HELP)
        return kind, rest.strip(), None
    model, at, base_url = rest.partition("@")
    model, base_url = model.strip(), base_url.strip()
    if not model:
        raise ConfigError(f"LLM spec {spec!r} names no model", hint=_SPEC_HELP)
    if kind == "openai-compatible" and not at:
        raise ConfigError(f"LLM spec {spec!r} needs the server's base URL after '@'", hint=_SPEC_HELP)
    if at and not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"the base URL in {spec!r} must start with http:// or https://", hint=_SPEC_HELP)
    return kind, model, (base_url.rstrip("/") if at else None)


def parse_embedder_spec(spec: str) -> tuple[str, str | int, Path | None]:
    """-> ("auto", "", None), ("hashing", dim, None) or ("fastembed", model, dir or None). An
    embedder *id* as a database records it (``hashing-768``) is accepted too, since messages name
    embedders by id. ``auto`` is resolved by kgviz.providers.embedder_auto."""
    s = (spec or "").strip()
    if s == "auto":
        return "auto", "", None
    id_kind, id_dash, id_dim = s.partition("-")
    if id_kind == "hashing" and id_dash and ":" not in s:
        s = f"hashing:{id_dim}"  # the id form; a bad dimension is reported by the branch below
    if s == "hashing":
        return "hashing", DEFAULT_HASH_DIM, None
    kind, sep, rest = s.partition(":")
    if kind == "hashing" and sep:
        try:
            dim = int(rest)
        except ValueError:
            dim = 0
        if not 16 <= dim <= 65536:
            raise ConfigError(f"embedder spec {spec!r}: the hashing dimension must be an integer from 16 to 65536")
        return "hashing", dim, None
    if kind == "fastembed":
        model, at, directory = rest.partition("@")
        model = model.strip() or (DEFAULT_FASTEMBED_MODEL if not at else "")
        if not model:
            raise ConfigError(f"embedder spec {spec!r} names no model before '@'")
        if at and not directory.strip():
            raise ConfigError(f"embedder spec {spec!r} has '@' but no directory after it")
        return "fastembed", model, (Path(directory.strip()).expanduser() if at else None)
    raise ConfigError(
        f"unknown embedder spec {spec!r}",
        hint="use auto, hashing, hashing:<dim> (or the id hashing-<dim>), fastembed:<model> or "
             "fastembed:<model>@<local model dir> (fastembed:<model>+int8-activations@<dir>: the integer variant "
             "scripts/make_minilm_dir.py --int8-activations makes)",
    )
