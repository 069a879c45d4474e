"""Parsing of the provider spec strings (``KGVIZ_LLM``, ``KGVIZ_EMBEDDER``, ``--llm``, ``--embedder``).

Kept apart from ``kgviz.providers.factory`` because ``kgviz.config`` validates specs while the
factory reads ``kgviz.config.Settings``: with the parsers here, neither imports the other back.
"""
from __future__ import annotations

from pathlib import Path

from kgviz.errors import ConfigError
from kgviz.providers.embedders import DEFAULT_FASTEMBED_MODEL, DEFAULT_HASH_DIM
from kgviz.providers.offline import OfflineLLM

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
        return "offline", OfflineLLM.model, None
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
             "fastembed:<model>@<local model dir>",
    )
