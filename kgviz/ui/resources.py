"""Process-wide resources held in ``st.cache_resource``.

* One GraphStore (hence one Kùzu ``Database``) per database folder and embedder per server
  process: Kùzu allows a single process to hold a database's file lock, and every session of
  this server shares it.
* One embedder per spec (loading a model is slow; the hashing embedder is cheap either way).
  ``auto`` on a workspace that already holds a graph means the embedder it was built with.

LLM clients are *not* cached: they are cheap to build and carry the session's API key, which must
stay in that session.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from kgviz.provider_specs import AUTO_SPEC, AutoEmbedderParams
from kgviz.providers.embedder_auto import RecordedEmbedder
from kgviz.providers.factory import make_embedder, make_llm
from kgviz.providers.pricing import PriceTable
from kgviz.providers.usage import UsageLedger
from kgviz.reasoning import Reasoner
from kgviz.ui.state import AppContext


@st.cache_resource(show_spinner="Loading the embedding model…")
def _embedder(spec: str, auto: AutoEmbedderParams, recorded: RecordedEmbedder | None) -> tuple[Any, str | None]:
    return make_embedder(spec, auto=auto, recorded=recorded)


def clear_auto_embedder() -> None:
    """Forget the resolved embedders (after a model was pulled, ``auto`` must look again); a
    workspace with a graph still gets the embedder it records."""
    _embedder.clear()


@st.cache_resource(show_spinner=False)
def _recorded_embedders() -> dict[str, RecordedEmbedder]:
    """Workspace folder -> what its graph was built with. Only found ones are kept: a graph's
    embedder never changes once written, while a folder without a graph may get one."""
    return {}


def _recorded(db_dir: Path) -> RecordedEmbedder | None:
    from kgviz.workspace import recorded_embedder  # lazily: it loads the graph store (kuzu)

    key = str(db_dir.resolve())
    known = _recorded_embedders()
    if key not in known:
        found = recorded_embedder(key)
        if found is None:
            return None
        known[key] = found
    return known[key]


@st.cache_resource(show_spinner="Opening the graph database…")
def _store(path: str, embedder_id: str, dim: int) -> Any:
    from kgviz.graph.store import GraphStore  # imported lazily: the store module loads kuzu

    return GraphStore.open(Path(path), embedder_id=embedder_id, dim=dim)


def embedder(ctx: AppContext) -> tuple[Any, str | None]:
    """(embedder, fallback notice or None) for the context's embedder spec. ``auto`` on a workspace
    with a graph loads the embedder that graph was built with (EmbedderUnavailableError if it
    cannot be loaded here), never another one."""
    recorded = _recorded(Path(ctx.db_dir)) if ctx.embedder_spec == AUTO_SPEC else None
    return _embedder(ctx.embedder_spec, ctx.settings.auto_embedder, recorded)


def store(ctx: AppContext) -> Any:
    """The workspace's GraphStore, created on first use. Raises EmbedderMismatchError when the
    database was built with another embedder, DatabaseLockedError when another process has it."""
    emb, _notice = embedder(ctx)
    return _store(str(Path(ctx.db_dir).resolve()), emb.id, int(emb.dim))


def database_exists(ctx: AppContext) -> bool:
    """True when the workspace folder already holds a database (checked without opening it, so
    merely visiting a page never creates one)."""
    from kgviz.graph.store import DB_FILENAME

    return (Path(ctx.db_dir) / DB_FILENAME).exists()


def prices(ctx: AppContext) -> PriceTable:
    return PriceTable.load(ctx.settings.price_table_path)


def llm(ctx: AppContext, *, refresh: bool = False) -> Any:
    """A fresh LLM client for the session (MissingKeyError when a provider has no key).
    ``refresh`` asks the model again instead of replaying cached replies (and caches the new
    accepted ones)."""
    return make_llm(ctx.llm_spec, ctx.settings, api_key=ctx.api_key, refresh=refresh)


def reasoner(ctx: AppContext, ledger: UsageLedger | None = None, *, refresh: bool = False) -> Reasoner:
    emb, _notice = embedder(ctx)
    return Reasoner(llm(ctx, refresh=refresh), emb, ledger=ledger if ledger is not None else UsageLedger(),
                    prices=prices(ctx))


def clear() -> None:
    """Drop every cached resource (tests; or after deleting a workspace)."""
    st.cache_resource.clear()
