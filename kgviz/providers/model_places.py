"""Where fastembed models sit on this machine: a model directory (complete or not) and a fastembed
cache (holds a model or not), and where ``kgviz models pull`` puts one under ``KGVIZ_HOME/models``.
Read by ``embedder_auto`` (where to look) and ``model_pull`` (where to write); it imports neither.
"""
from __future__ import annotations

from pathlib import Path

from kgviz.provider_specs import DIR_MODEL, INT8_ACTIVATIONS, PULLED_CACHE_NAME, PULLED_DIR_NAME, variant_name

PULL_MODEL = DIR_MODEL  # the model ``kgviz models pull`` fetches: same id (fastembed:<model>) by either route
TOKENIZER_FILES = ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json")
OUTPUT_FILES = ("model.onnx", *TOKENIZER_FILES)  # what fastembed reads from a MiniLM model directory


def models_dir(home: Path) -> Path:
    return home / "models"


def pulled_model_dir(models: Path) -> Path:
    """The registry route's model directory."""
    return models / PULLED_DIR_NAME


def pulled_variant_dir(models: Path, variant: str = INT8_ACTIVATIONS) -> Path:
    """Where ``kgviz models pull --int8-activations`` (``--int8-fused``) writes that variant of the
    registry route's model (``kgviz.providers.int8_activations``): ``<dir name>+<variant>``."""
    return models / variant_name(PULLED_DIR_NAME, variant)


def pulled_cache(models: Path) -> Path:
    """The fastembed cache the hub route downloads into."""
    return models / PULLED_CACHE_NAME


def is_complete(out: Path) -> bool:
    """True when ``out`` holds every file of a MiniLM model directory, none empty."""
    return all((out / name).is_file() and (out / name).stat().st_size > 0 for name in OUTPUT_FILES)


def in_cache(cache: Path, model: str) -> bool:
    """True when the cache holds a hub folder for ``model`` (fastembed itself accepts an older
    casing of the folder name, so the comparison ignores case)."""
    from kgviz.providers.embedders import describe_model  # lazily: it loads fastembed

    if not cache.is_dir():
        return False
    repo = str(describe_model(model).get("sources", {}).get("hf") or "")
    folder = ("models--" + repo.replace("/", "--")).lower()
    return bool(repo) and any(entry.name.lower() == folder for entry in cache.iterdir())
