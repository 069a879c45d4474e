"""A workspace = one database directory plus the providers used with it.

The CLI and the app both open workspaces through ``open_workspace`` so that the same checks run
everywhere: the embedder is resolved (with a visible fallback notice), the database is opened
with that embedder (a mismatch is a clear error), and the reasoner is wired to a usage ledger and
the editable price table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kgviz.config import Settings, resolve_llm_spec
from kgviz.errors import GraphStoreError
from kgviz.graph.store import DB_FILENAME, GraphStore
from kgviz.methods.base import MethodContext
from kgviz.providers.base import LLM, Embedder
from kgviz.provider_specs import AUTO_SPEC
from kgviz.providers.embedder_auto import RecordedEmbedder
from kgviz.providers.factory import make_embedder, make_llm
from kgviz.providers.pricing import PriceTable
from kgviz.providers.usage import UsageLedger
from kgviz.reasoning import Reasoner


@dataclass
class Workspace:
    settings: Settings
    store: GraphStore
    llm: LLM
    embedder: Embedder
    prices: PriceTable
    ledger: UsageLedger = field(default_factory=UsageLedger)
    notices: list[str] = field(default_factory=list)  # e.g. embedder fallback; shown by UI/CLI

    @property
    def mode(self) -> str:
        return "offline" if self.llm.is_offline else f"{self.llm.provider}:{self.llm.model}"

    def close(self) -> None:
        """Release the database (another process may open it afterwards)."""
        self.store.close()

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reasoner(self, ledger: UsageLedger | None = None) -> Reasoner:
        return Reasoner(self.llm, self.embedder, ledger if ledger is not None else self.ledger, self.prices)

    def method_context(self, ledger: UsageLedger | None = None) -> MethodContext:
        return MethodContext(self.store, self.reasoner(ledger))


def open_workspace(
    settings: Settings,
    *,
    db_dir: str | Path | None = None,
    llm_spec: str | None = None,
    embedder_spec: str | None = None,
    api_key: str | None = None,
    read_only: bool = False,
    use_cache: bool = True,
    refresh_cache: bool = False,
) -> Workspace:
    """Open (creating if needed) the database with the configured embedder and LLM.

    An existing database keeps the embedder it was built with: when ``embedder_spec`` is not given
    (or is ``auto``) and the database records one, that one is loaded again, so ``kgviz ask --db
    DIR`` just works; it fails with EmbedderUnavailableError when that model cannot be loaded here.
    ``use_cache=False`` bypasses the LLM cache (no reads, no writes); ``refresh_cache`` re-asks
    every call and stores the accepted replies (kgviz.providers.cache)."""
    db = Path(db_dir) if db_dir is not None else settings.db_dir
    notices: list[str] = []
    spec = embedder_spec or settings.embedder_spec
    recorded = None
    if embedder_spec is None or spec == AUTO_SPEC:
        recorded = recorded_embedder(db)
        if recorded is not None:
            spec = AUTO_SPEC
    embedder, notice = make_embedder(spec, auto=settings.auto_embedder, recorded=recorded)
    if notice:
        notices.append(notice)
    llm = make_llm(resolve_llm_spec(llm_spec or settings.llm_spec), settings, api_key=api_key,
                   use_cache=use_cache, refresh=refresh_cache)
    store = GraphStore.open(db, embedder_id=embedder.id, dim=embedder.dim, read_only=read_only)
    prices = PriceTable.load(settings.price_table_path)
    return Workspace(settings, store, llm, embedder, prices, notices=notices)


def recorded_embedder(db_dir: str | Path) -> RecordedEmbedder | None:
    """What the graph in ``db_dir`` was built with, or None when there is no graph yet. Opened
    read-only, so reading it neither creates nor migrates anything."""
    if not (Path(db_dir).expanduser() / DB_FILENAME).exists():
        return None
    try:
        with GraphStore.open(db_dir, read_only=True) as store:
            if not store.embedder_id:
                return None
            return RecordedEmbedder(store.embedder_id)
    except GraphStoreError as exc:
        if "is empty" in str(exc):  # a database file whose creation never finished: no graph yet
            return None
        raise

