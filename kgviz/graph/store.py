"""GraphStore: kgviz's only door to Kùzu (the only module that imports kuzu).

Facts about kuzu 0.11.3 this module is built on (each checked here, most pinned by tests in
tests/graph/):

* A database is a single file (+ ``.wal``). ``GraphStore.open(path)`` takes a workspace
  *directory* and keeps the database in ``path / "graph.kuzu"``.
* Two ``kuzu.Database`` objects on one file in one process are not refused by Kùzu but are not
  safe, so a module-level registry hands out one Database per file per process (ref-counted).
  A second *process* gets "Could not set lock on file" — even read-only — which becomes
  ``DatabaseLockedError``.
* One write transaction at a time per database: a second one fails at once. Every write here
  runs under a per-database re-entrant lock shared by all stores and threads of this process.
  Reads run concurrently on pooled connections (one connection is never used by two threads).
* Checkpoints wait for every active transaction, readers included, and give up after 5 s with
  "Timeout waiting for active transactions ..." — raised to the *writer* although its data was
  already committed. With Python threads reading continuously this happened on every COPY
  (COPY always checkpoints, even with auto_checkpoint off) and on auto-checkpoints. So each
  statement passes a gate: reads share it, writes (and CHECKPOINT) hold it alone; automatic
  checkpoints are off and ``_maybe_checkpoint`` runs one when the WAL passes CHECKPOINT_WAL_BYTES.
* The vector, fts, algo and json extensions are statically linked: loaded without ``LOAD`` and
  never downloaded. ``INSTALL`` is never issued.
* COPY matches columns by position and is atomic per statement: a process killed mid-COPY
  leaves none of that COPY's rows after reopening (earlier commits survive, replayed from the
  WAL). A failed COPY (e.g. a duplicate key) also leaves nothing behind.
* ``COPY T (a, b) FROM $rows`` loads the listed columns (by position in that list) and leaves
  the others NULL, as a column of nulls would (schema.cypher gives no column a DEFAULT).
* COPY into a multi-pair rel table (SUBJ/OBJ) needs ``(from='X', to='Y')``; passing it for a
  single-pair table is accepted too, so it is always passed.
* Every COPY into a node table starts a new node group (2^17 rows): 50k-row COPYs of 768-d rows
  took 2.1x the disk of one COPY and ~40 % longer. A COPY into a rel table that holds edges gets
  slower and hungrier with what is there: 50k-edge FROM_CHUNK COPYs (150-char sentences, 105k
  chunks) took 0.7 s for the first, 64 s for the 11th, and the 12th filled a 2 GB pool; one COPY
  of 1.47M such edges from a parquet file took 14.5 s in it (``copy_edges_into_empty``).
* COPY FROM a parquet file takes a literal path (no $param) and reads its row groups in parallel,
  so rows do not keep the file's order (fine for edges, not for node order); FLOAT[n] columns load
  from parquet lists bit for bit.
* Vector / full-text / PageRank facts are listed in search.py.
* ``Connection.execute(text, params)`` prepares the statement on every call, and preparing
  (parse, bind, plan) runs while holding the GIL; executing releases it. A PreparedStatement can
  be executed again with values of other types (int sizes, float for int, an empty list): each
  execution binds its own values, with the same rows and error messages as a fresh statement
  (checked here). So reading statements are prepared once per connection (``_Handle.prepared``).
* Statements interpolate only identifiers that exist in the catalog (table/column names) and
  literals this module produced or validated; every caller-supplied value is a $param.
"""
from __future__ import annotations

import errno
import json
import operator
import os
import re
import tempfile
import threading
import uuid
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import kuzu
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kgviz.config import buffer_pool_bytes
from kgviz.errors import (
    BuildCancelled,
    DatabaseLockedError,
    EmbedderMismatchError,
    GraphStoreError,
    SchemaVersionError,
    WriteConflictError,
)
from kgviz.graph.arrow import Rows, build_table, column_sources, is_float_type, vector_dim, vectors_to_numpy
from kgviz.graph import search
from kgviz.graph.batching import PK_LOOKUP_MAX, id_list_statements

SCHEMA_VERSION = "2"  # 2: Triple.kind, FROM_CHUNK.sentence; triple ids no longer per document (issue 12)
DB_FILENAME = "graph.kuzu"
# The graph's version (see _Handle.version_for_copy): a token beside the database file that every
# write changes before it starts, so a copy of what the graph held, stored in the workspace under
# a token, is used only while the graph is the one it was made from.
VERSION_FILENAME = "graph.version"
VERSION_FORMAT = 1
REQUIRED_EXTENSIONS = ("vector", "fts", "algo")
_DIM_TOKEN = "__DIM__"
_CREATES_TABLE = re.compile(r"CREATE (?:NODE|REL) TABLE IF NOT EXISTS (\w+)\s*\(")

# Checkpoint once the write-ahead log is larger than this (ours; Kùzu's own default is 16 MiB).
CHECKPOINT_WAL_BYTES = 16 * 1024 * 1024
# Kùzu reserves max_db_size of *address space* per open database (default 8 TiB): about 15 open
# databases exhaust a process's 128 TiB, which the app's workspace switching and the test suite
# reach. 1 TiB per graph is far beyond any corpus kgviz is for. Must be a power of two.
MAX_DB_SIZE = 1 << 40
_LOCK_MESSAGE = "Could not set lock on file"
# Reading statements kept prepared per connection (ours): a comparison of every method runs ~110
# statements of ~60 texts; past this many the connection's statements start over.
PREPARED_PER_CONNECTION = 512
# parameter values a prepared statement is reused for; anything else (an Arrow table, a data
# frame) is bound when it is prepared, so such a statement is prepared afresh each time
_PLAIN_PARAMS = (str, int, float, list, tuple, type(None))
_WRITE_CONFLICT_MESSAGE = "Only one write transaction at a time"


# --- one Database per file per process ----------------------------------------------------------
class _Gate:
    """Readers share, a writer is alone; a waiting writer stops new readers (no starvation).
    Held for one statement at a time and never nested, so it cannot deadlock on itself."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writing or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            while self._writing or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class _Handle:
    """A shared kuzu.Database with its write lock, connection pool and catalog cache."""

    def __init__(self, db_file: Path) -> None:
        self.db_file = db_file
        try:
            self.db = kuzu.Database(str(db_file), auto_checkpoint=False, max_db_size=MAX_DB_SIZE,
                                    buffer_pool_size=buffer_pool_bytes())  # KGVIZ_BUFFER_POOL_MB
        except RuntimeError as err:
            if _LOCK_MESSAGE in str(err):
                raise DatabaseLockedError(
                    f"The graph database at {db_file} is locked: another kgviz process "
                    "(the app or a CLI command) has it open.",
                    hint="close the other kgviz app or CLI command, or pick another workspace",
                ) from err
            raise GraphStoreError(f"Cannot open the graph database at {db_file}: {err}") from err
        self.refcount = 0
        self.write_lock = threading.RLock()
        self.gate = _Gate()
        self.closed = False
        self._pool_lock = threading.Lock()
        self._idle: list[kuzu.Connection] = []
        self._all: list[kuzu.Connection] = []
        self._local = threading.local()
        self.catalog: _Catalog | None = None
        self.indexes: dict[tuple[str, str], tuple[str, list[str]]] | None = None  # show_indexes(), cached
        # Bumped by every write statement: caches of what the database holds (the exact-search
        # matrices of graph/search.py) are valid while it stays the same.
        self.generation = 0
        self.matrix_lock = threading.Lock()
        self.matrices: dict[str, tuple[int, Any]] = {}
        # re-entrant: a derived load may ask for another (the read model's key inside a view's load)
        self.derived_lock = threading.RLock()
        self.derived: dict[str, tuple[int, Any]] = {}  # GraphStore.derived
        self.indexes_checked = False  # GraphStore._drop_broken_indexes ran on this Database
        self.version_file = db_file.with_name(VERSION_FILENAME)
        self.version_lock = threading.Lock()
        self.version = _read_version(self.version_file)
        # True once the current token may key a stored copy: handed out by version_for_copy, or
        # read from the file (an earlier process may have stored copies under it). Then the next
        # write must change it first; until it is handed out again, writes leave it as it is.
        self.version_handed_out = True
        # reading statements prepared on each connection: connection -> (generation, text -> statement)
        self._prepared: dict[kuzu.Connection, tuple[int, dict[str, kuzu.PreparedStatement]]] = {}

    def connection(self) -> AbstractContextManager[kuzu.Connection]:
        """A connection used by this thread alone until the block ends (or the pinned one)."""
        return self._connection(own=False)

    def own_connection(self) -> AbstractContextManager[kuzu.Connection]:
        """A connection of its own for one statement, closed after it (the pinned one inside a
        transaction). For COPY FROM an Arrow table: a kuzu 0.11.3 connection keeps every table it
        copied from alive until it is closed (measured: four 20k-row 768-d COPYs on one pooled
        connection held 300 MB of Python memory after their rows were gone; closing the
        connection freed it). A build's loads stayed in memory as long as the workspace was open."""
        return self._connection(own=True)

    @contextmanager
    def _connection(self, own: bool) -> Iterator[kuzu.Connection]:
        """The pinned connection inside a transaction; else a pooled one returned to the pool
        after the block, or (``own``) a new one closed after it."""
        pinned = getattr(self._local, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with self._pool_lock:
            if self.closed:
                raise GraphStoreError(f"The graph store for {self.db_file} is closed.")
            conn = None if own else (self._idle.pop() if self._idle else None)
            if conn is None:
                conn = kuzu.Connection(self.db)
                if not own:
                    self._all.append(conn)
        try:
            yield conn
        finally:
            if own:
                conn.close()
            else:
                with self._pool_lock:
                    if not self.closed:
                        self._idle.append(conn)

    @contextmanager
    def pinned(self) -> Iterator[kuzu.Connection]:
        """Make this thread use one connection for the whole block (explicit transactions)."""
        with self.connection() as conn:
            previous = getattr(self._local, "conn", None)
            self._local.conn = conn
            try:
                yield conn
            finally:
                self._local.conn = previous

    def in_transaction(self) -> bool:
        return getattr(self._local, "conn", None) is not None

    def run(self, conn: kuzu.Connection, cypher: str, params: Mapping[str, Any] | None, *,
            write: bool, fetch: str = "none") -> Any:
        """One statement under the gate; its result is read ("rows"/"arrow") and closed inside."""
        with self.gate.exclusive() if write else self.gate.shared():
            if write:
                self.generation += 1  # before the statement: a reader that overlaps it reloads
                self.new_version()  # before the statement: a crash part way leaves a token nothing matches
                result = _run(conn, cypher, params)
            else:
                result = _run(conn, cypher, params, self.prepared(conn, cypher, params))
            try:
                if fetch == "rows":
                    return list(result.rows_as_dict().get_all())
                if fetch == "arrow":
                    return result.get_as_arrow(chunk_size=-1)
                return None
            finally:
                result.close()

    def new_version(self) -> None:
        """Give the graph a new version token before a write, unless the current one has not been
        handed out since it was made (a build's thousands of statements write the file once).
        A write whose new token cannot be recorded does not start: the old token would vouch for
        copies of a graph that no longer exists."""
        with self.version_lock:
            if not self.version_handed_out:
                return
            token: str | None = uuid.uuid4().hex
            try:
                _write_version(self.version_file, str(token))
            except OSError as err:
                try:  # no token is "unknown", never a match
                    self.version_file.unlink(missing_ok=True)
                    token = None
                except OSError:
                    raise GraphStoreError(
                        f"The graph in {self.db_file.parent} cannot be written: its version file "
                        f"{self.version_file} can be neither replaced nor removed ({err}).",
                        hint="make the workspace folder writable (or free disk space) and try again",
                    ) from err
            self.version, self.version_handed_out = token, False

    def version_for_copy(self) -> str | None:
        """The graph's version token, for a copy of the graph stored in the workspace under it;
        None when none can be recorded (a folder that cannot be written). A graph without one (made
        before kgviz kept it, or its file lost) gets a new one: nothing stored before matches it."""
        with self.version_lock:
            if self.version is None:
                token = uuid.uuid4().hex
                try:
                    _write_version(self.version_file, token)
                except OSError:
                    return None
                self.version = token
            self.version_handed_out = True
            return self.version

    def prepared(self, conn: kuzu.Connection, cypher: str,
                 params: Mapping[str, Any] | None) -> kuzu.PreparedStatement | None:
        """``cypher`` prepared on ``conn`` once, while the database stays as it is (a write
        statement starts every connection's statements afresh). None, to run the text, for a
        statement without parameters (Kùzu runs those unprepared, the GIL released throughout),
        with a parameter that is not a plain value (a table Kùzu would scan), or one that does not
        prepare (running the text reports its error). Called only by the thread holding ``conn``."""
        if not params or not all(isinstance(v, _PLAIN_PARAMS) for v in params.values()):
            return None
        generation, statements = self._prepared.get(conn, (-1, {}))
        if generation != self.generation or len(statements) >= PREPARED_PER_CONNECTION:
            statements = {}
            self._prepared[conn] = (self.generation, statements)
        found = statements.get(cypher)
        if found is None:
            found = kuzu.PreparedStatement(conn, cypher)
            if not found.is_success():
                return None
            statements[cypher] = found
        return found

    def close(self) -> None:
        with self.gate.exclusive():  # closing checkpoints, which must not meet a reader
            with self._pool_lock:
                self.closed = True
                conns, self._all, self._idle = self._all, [], []
            self._prepared.clear()
            for conn in conns:
                conn.close()
            self.db.close()


def _read_version(path: Path) -> str | None:
    """The token in a version file; None when there is none or it cannot be read (unknown)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    token = data.get("token") if isinstance(data, dict) and data.get("format") == VERSION_FORMAT else None
    return token if isinstance(token, str) and re.fullmatch(r"[0-9a-f]{32}", token) else None


def _write_version(path: Path, token: str) -> None:
    """Replace the version file with ``token``, durably: written aside, flushed to disk, renamed,
    and the folder flushed, so that after a crash the file holds the old token or the new one,
    never a torn one, and never the old one once a write that followed could have reached disk."""
    aside = path.with_name(f"{path.name}.tmp{os.getpid()}-{threading.get_ident()}")
    try:
        with open(aside, "w", encoding="utf-8") as f:
            f.write(json.dumps({"format": VERSION_FORMAT, "token": token}))
            f.flush()
            os.fsync(f.fileno())
        os.replace(aside, path)
    except OSError:
        aside.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    except OSError as err:  # some file systems cannot flush a folder; the rename stands
        if err.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(folder)


_REGISTRY: dict[Path, _Handle] = {}
_REGISTRY_LOCK = threading.Lock()
# One build at a time per database file. Not on _Handle: a handle goes away when its last store
# closes, and a session that closes and reopens its store between two builds must still meet the
# same lock. Re-entrant, so a build nested in a build on one thread (none today) cannot deadlock.
# Across processes Kùzu's file lock already keeps a second process out of the database.
_BUILD_LOCKS: dict[Path, threading.RLock] = {}
BUILD_LOCK_POLL_S = 0.2
# What opening a database file repaired (GraphStore._drop_broken_indexes), until a build reports it.
_REPAIRS: dict[Path, list[str]] = {}


def _acquire(db_file: Path) -> _Handle:
    with _REGISTRY_LOCK:
        handle = _REGISTRY.get(db_file)
        if handle is None:
            handle = _Handle(db_file)
            _REGISTRY[db_file] = handle
        handle.refcount += 1
        return handle


def _release(handle: _Handle) -> None:
    # Closed under the registry lock so that a concurrent open of the same file waits for it.
    with _REGISTRY_LOCK:
        handle.refcount -= 1
        if handle.refcount > 0:
            return
        _REGISTRY.pop(handle.db_file, None)
        handle.close()


@dataclass
class _Catalog:
    """Table and column names: the only identifiers ever interpolated into Cypher."""

    nodes: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # table -> [(col, type)]
    primary_keys: dict[str, str] = field(default_factory=dict)
    rels: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # rel -> [(prop, type)]
    pairs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # rel -> [(from, to)]


def _translate(err: RuntimeError, cypher: str) -> GraphStoreError:
    message = str(err)
    if "before checkpointing" in message:
        return GraphStoreError(
            f"Kùzu could not checkpoint the graph while other queries were running: {message}",
            hint="the statement itself may already be committed; check before repeating it",
        )
    if _WRITE_CONFLICT_MESSAGE in message:
        return WriteConflictError(
            "Another write to the graph is running in this process.",
            hint="wrap the write in store.execute / store.write_lock so writes queue up",
        )
    statement = " ".join(cypher.split())[:200]
    return GraphStoreError(f"Kùzu rejected a statement: {message}", hint=f"statement: {statement}")


def _run(conn: kuzu.Connection, cypher: str, params: Mapping[str, Any] | None,
         prepared: kuzu.PreparedStatement | None = None) -> Any:
    try:
        result = conn.execute(cypher if prepared is None else prepared, dict(params or {}))
    except RuntimeError as err:
        raise _translate(err, cypher) from err
    if isinstance(result, list):
        for extra in result:
            extra.close()
        raise GraphStoreError("One statement per call: the Cypher text held several statements.")
    return result


def _dropped_note(kind: str, table: str) -> str:
    if kind == "FTS":
        return (f"dropped the full-text index on {table}, which an interrupted build left half made "
                "(a build creates it again)")
    return (f"dropped the vector index on {table}, which an interrupted build left half made (searches rank "
            f"{table} exactly without it; a build creates it again where the table needs one)")


def _spec_of(embedder_id: str) -> str:
    """An embedder id as the spec a user types (``hashing-768`` -> "'hashing:768' (id hashing-768)").
    Kept local on purpose: the store does not import the providers."""
    kind, _, dim = embedder_id.partition("-")
    if kind == "hashing" and dim.isdigit():
        return f"'hashing:{dim}' (id {embedder_id})"
    return f"'{embedder_id}'"


def _schema_statements(dim: int) -> list[str]:
    text = resources.files("kgviz.graph").joinpath("schema.cypher").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    body = "\n".join(lines).replace(_DIM_TOKEN, str(int(dim)))
    return [stmt.strip() for stmt in body.split(";") if stmt.strip()]


# --- the store ------------------------------------------------------------------------------------
class GraphStore:
    """A workspace's graph. Create with ``GraphStore.open``; share freely between threads.
    The search methods delegate to kgviz.graph.search, which takes the store as an argument."""

    def __init__(self, handle: _Handle, path: Path, read_only: bool) -> None:
        self._handle = handle
        self.path = path
        self.read_only = read_only
        self.embedder_id: str = ""
        self.dim: int = 0
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        embedder_id: str | None = None,
        dim: int | None = None,
        *,
        read_only: bool = False,
    ) -> GraphStore:
        """Open (or create) the graph in workspace directory ``path``.

        ``embedder_id``/``dim`` None means "whatever the graph was built with" (needed for a new
        graph). ``read_only`` refuses writes in this store object; the shared kuzu Database is
        opened read-write regardless, because Kùzu cannot add a writer to a read-only Database
        and a read-only open would not let another process in anyway.
        """
        if dim is not None and not isinstance(dim, bool):
            dim = operator.index(dim)  # numpy integers are fine, floats are not
        directory = Path(path).expanduser().resolve()
        if directory.exists() and not directory.is_dir():
            raise GraphStoreError(f"{directory} is a file; a graph workspace is a directory.")
        db_file = directory / DB_FILENAME
        if read_only and not db_file.exists():
            raise GraphStoreError(
                f"No graph database in {directory}.", hint="build a graph in this workspace first"
            )
        directory.mkdir(parents=True, exist_ok=True)
        handle = _acquire(db_file)
        store = cls(handle, directory, read_only)
        try:
            store._check_extensions()
            store._drop_broken_indexes()
            store._prepare(embedder_id, dim)
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def recorded_embedder(cls, path: str | Path) -> str | None:
        """The embedder id a graph in ``path`` was built with, or None when there is no graph yet."""
        if not (Path(path).expanduser().resolve() / DB_FILENAME).exists():
            return None
        with cls.open(path) as store:
            return store.embedder_id or None

    @property
    def db_file(self) -> Path:
        return self._handle.db_file

    def close(self) -> None:
        """Release this store; the Database closes when its last store in the process closes."""
        if not self._closed:
            self._closed = True
            _release(self._handle)

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_extensions(self) -> None:
        rows = self.query("CALL show_loaded_extensions() RETURN *")
        loaded = {str(next(iter(row.values()))).lower() for row in rows}
        for ext in REQUIRED_EXTENSIONS:
            if ext in loaded:
                continue
            try:
                # LOAD only reads an already-installed extension from disk; it never downloads.
                self.query(f"LOAD {ext}")
            except GraphStoreError as err:
                raise GraphStoreError(
                    f"The Kùzu '{ext}' extension is not available: {err}",
                    hint="reinstall kuzu==0.11.3, whose wheel bundles vector, fts and algo",
                ) from err

    def _drop_broken_indexes(self) -> None:
        """Drop the indexes Kùzu lists without their data, once per Database opened.

        A process killed while CREATE_VECTOR_INDEX checkpoints (a ``.shadow`` file beside the
        database) leaves an index that the first open lists with ``extension_loaded`` false and
        cannot query ("bad optional access"); closing that open checkpoints the catalog, and from
        then on every open of the file fails an assertion in Kùzu's vector extension. Dropping
        the index during that first open keeps the database usable: searches rank exactly until
        the next build creates the index again. Done even for a read-only store, since the
        Database underneath is read-write and the next close would seal the damage."""
        handle = self._handle
        with handle.write_lock:
            if handle.indexes_checked:
                return
            handle.indexes_checked = True
            rows = self.query("CALL show_indexes() RETURN *")
            for row in rows:
                if row["extension_loaded"]:
                    continue
                table, name, kind = row["table_name"], row["index_name"], str(row["index_type"]).upper()
                drop = {"FTS": "DROP_FTS_INDEX", "HNSW": "DROP_VECTOR_INDEX"}.get(kind)
                if drop is None:
                    raise GraphStoreError(f"The {kind} index {name} on {table} in {self.db_file} is damaged.",
                                          hint="rebuild the graph in a new workspace")
                self._statement(f"CALL {drop}('{table}', '{name}')", None, write=True, fetch="none")
                handle.indexes = None
                with _REGISTRY_LOCK:
                    _REPAIRS.setdefault(self.db_file, []).append(_dropped_note(kind, table))

    def take_repairs(self) -> list[str]:
        """What opening this database file repaired in this process, once (the next build
        reports it; a CLI command may have opened and closed the file before)."""
        with _REGISTRY_LOCK:
            return _REPAIRS.pop(self.db_file, [])

    def _prepare(self, embedder_id: str | None, dim: int | None) -> None:
        tables = {row["name"] for row in self.query("CALL show_tables() RETURN name")}
        version = self.get_meta("schema_version") if "Meta" in tables else None
        if version is None:
            # No Meta table but other tables: not ours. Meta without a version: a creation that
            # was interrupted before its last step, so it is simply completed now.
            if "Meta" not in tables and tables:
                raise GraphStoreError(f"{self.db_file} holds a Kùzu database that kgviz did not create.")
            self._create(embedder_id, dim)
            return
        if version != SCHEMA_VERSION:
            raise SchemaVersionError(
                f"The graph at {self.path} uses kgviz graph schema v{version}; this kgviz uses "
                f"v{SCHEMA_VERSION}.",
                hint="rebuild the graph in a new workspace, or use the kgviz version that built it",
            )
        db_embedder = self.get_meta("embedder_id") or ""
        db_dim = int(self.get_meta("dim") or 0)
        if (embedder_id is not None and embedder_id != db_embedder) or (dim is not None and dim != db_dim):
            raise EmbedderMismatchError(
                f"The graph at {self.path} was built with embedder '{db_embedder}' (dim {db_dim}), "
                f"but the configured embedder is '{embedder_id or db_embedder}' (dim {dim or db_dim}).",
                hint=f"choose embedder {_spec_of(db_embedder)} to use this graph, or pick a new workspace "
                f"to build one with {_spec_of(embedder_id or db_embedder)} (dim {dim or db_dim})",
            )
        self.embedder_id, self.dim = db_embedder, db_dim
        if not self.read_only:
            self._apply_schema(db_dim, tables)

    def _create(self, embedder_id: str | None, dim: int | None) -> None:
        if self.read_only:
            raise GraphStoreError(f"The graph in {self.path} is empty.", hint="build a graph first")
        if not embedder_id or not isinstance(dim, int) or dim <= 0:
            raise GraphStoreError(
                f"Creating a graph in {self.path} needs an embedder id and a positive dimension "
                f"(got {embedder_id!r}, {dim!r})."
            )
        self._apply_schema(dim)
        self.embedder_id, self.dim = embedder_id, dim
        self.set_meta("embedder_id", embedder_id)
        self.set_meta("dim", str(dim))
        # Written last: a crash before this line leaves a graph that is simply created again.
        self.set_meta("schema_version", SCHEMA_VERSION)

    def _apply_schema(self, dim: int, present: set[str] | frozenset[str] = frozenset()) -> None:
        """Create the schema's tables that ``present`` lacks. A statement for a table that exists
        is not run: it would change nothing, but as a write it would give the graph a new version
        at every open (and no copy stored in the workspace would ever be used)."""
        with self.write_lock():
            for statement in _schema_statements(dim):
                creates = _CREATES_TABLE.match(statement)
                if creates is None or creates.group(1) not in present:
                    self.execute(statement)
            self._handle.catalog = None

    # -- catalog -----------------------------------------------------------------------------------
    def _catalog(self) -> _Catalog:
        if self._handle.catalog is not None:
            return self._handle.catalog
        catalog = _Catalog()
        for row in self.query("CALL show_tables() RETURN name, type"):
            name = row["name"]
            info = self.query(f"CALL table_info('{name}') RETURN *")
            columns = [(r["name"], r["type"]) for r in info]
            if row["type"] == "NODE":
                catalog.nodes[name] = columns
                catalog.primary_keys[name] = next(r["name"] for r in info if r["primary key"])
            elif row["type"] == "REL":
                catalog.rels[name] = columns
                conn = self.query(f"CALL show_connection('{name}') RETURN *")
                catalog.pairs[name] = [(r["source table name"], r["destination table name"]) for r in conn]
        self._handle.catalog = catalog
        return catalog

    def _node_table(self, table: str) -> list[tuple[str, str]]:
        columns = self._catalog().nodes.get(table)
        if columns is None:
            raise GraphStoreError(f"No node table '{table}'; tables: {sorted(self._catalog().nodes)}")
        return columns

    def _column(self, table: str, column: str) -> str:
        for name, kuzu_type in self._node_table(table):
            if name == column:
                return kuzu_type
        raise GraphStoreError(f"Node table '{table}' has no column '{column}'.")

    def _pk(self, table: str) -> str:
        self._node_table(table)
        return self._catalog().primary_keys[table]

    def graph_version(self) -> str | None:
        """A token naming the graph as it is, for copies of it stored in the workspace (the read
        model, kgviz.graph.read_model): every write statement gives the graph a new one before it
        starts, in this process or a later one (it is kept in ``graph.version`` beside the
        database); None when it cannot be recorded, and then nothing stored may be used."""
        return self._handle.version_for_copy()

    def derived(self, key: str, load: Callable[[GraphStore], Any]) -> Any:
        """``load(self)``, computed once per state of the database and shared by every store and
        thread of this process (each browser session of the app): kept on the Database handle
        until the next write statement, and gone with the handle. For read-only views of the
        graph that are slow to make (e.g. every text normalised for a search). A write during
        the load makes the next call load again."""
        handle = self._handle
        with handle.derived_lock:  # one load at a time: a second asker waits for the first
            generation = handle.generation
            found = handle.derived.get(key)
            if found is not None and found[0] == generation:
                return found[1]
            value = load(self)
            handle.derived[key] = (generation, value)
            return value

    # -- queries and writes ------------------------------------------------------------------------
    def query(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run one reading statement and return its rows as dicts (safe from many threads).
        Statements that write belong in ``execute``."""
        return self._statement(cypher, params, write=False, fetch="rows")

    def query_arrow(self, cypher: str, params: Mapping[str, Any] | None = None) -> pa.Table:
        """Like ``query`` but returns a pyarrow Table (much faster for wide or long results)."""
        return self._statement(cypher, params, write=False, fetch="arrow")

    def execute(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run one writing statement under the write lock; returns its rows (if it RETURNs any)."""
        self._ensure_writable()
        with self.write_lock():
            if "INDEX" in cypher.upper():  # index created or dropped: the cached list is stale
                self._handle.indexes = None
            rows = self._statement(cypher, params, write=True, fetch="rows")
            self._maybe_checkpoint()
            return rows

    def _statement(self, cypher: str, params: Mapping[str, Any] | None, *, write: bool, fetch: str) -> Any:
        self._ensure_open()
        # a statement that scans an Arrow table (COPY / LOAD FROM $rows) runs on a connection of
        # its own, closed after it: a pooled one would keep the table alive (_Handle.own_connection)
        scans = params is not None and any(isinstance(v, pa.Table) for v in params.values())
        with self._handle.own_connection() if scans else self._handle.connection() as conn:
            return self._handle.run(conn, cypher, params, write=write, fetch=fetch)

    def _maybe_checkpoint(self) -> None:
        """Fold the WAL into the database file once it is large (auto-checkpoints are off)."""
        if self._handle.in_transaction():
            return
        wal = self.db_file.with_name(self.db_file.name + ".wal")
        if wal.exists() and wal.stat().st_size > CHECKPOINT_WAL_BYTES:
            self._statement("CHECKPOINT", None, write=True, fetch="none")

    @contextmanager
    def write_lock(self, timeout: float | None = None) -> Iterator[None]:
        """The database's re-entrant write lock (shared by every store and thread in the process)."""
        acquired = self._handle.write_lock.acquire(timeout=-1 if timeout is None else timeout)
        if not acquired:
            raise WriteConflictError(
                f"Another write to {self.path} did not finish within {timeout} s.",
                hint="wait for the running build or import to finish",
            )
        try:
            yield
        finally:
            self._handle.write_lock.release()

    def build_running(self) -> bool:
        """True while a build of this database runs on another thread of this process (another
        app session's build); a probe of the build lock that never waits."""
        with _REGISTRY_LOCK:
            lock = _BUILD_LOCKS.get(self.db_file)
        if lock is None or lock.acquire(blocking=False):
            if lock is not None:
                lock.release()
            return False
        return True

    @contextmanager
    def build_lock(
        self,
        *,
        on_wait: Callable[[], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[bool]:
        """Hold the workspace's build lock for the block; yields whether it had to wait.

        Two app sessions share one process (and one Database), and the write lock only orders
        single statements: two builds interleaving their stages each planned the KET index over
        the chunks it saw and the last writer won, leaving a half index behind two successes.
        Builds therefore run one at a time per database file. ``on_wait`` is called once when
        another build holds the lock (the caller reports "waiting"); ``cancelled`` is polled while
        waiting, and a true answer gives up with BuildCancelled (nothing was written)."""
        with _REGISTRY_LOCK:
            lock = _BUILD_LOCKS.setdefault(self.db_file, threading.RLock())
        waited = not lock.acquire(blocking=False)
        if waited:
            if on_wait is not None:
                on_wait()
            while not lock.acquire(timeout=BUILD_LOCK_POLL_S):
                if cancelled is not None and cancelled():
                    raise BuildCancelled(
                        f"build cancelled while waiting for another build of {self.path} to finish",
                        hint="nothing was written; start the build again when the other one is done",
                    )
        try:
            yield waited
        finally:
            lock.release()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Every write of this thread inside the block (``execute``, bulk loads, ``set_meta`` ...)
        commits or rolls back together; its reads see the uncommitted writes. Other threads'
        writes wait for the block to end; their reads see the state before it."""
        self._ensure_writable()
        if self._handle.in_transaction():
            yield  # already inside a transaction on this thread: join it
            return
        with self.write_lock():
            with self._handle.pinned() as conn:
                self._handle.run(conn, "BEGIN TRANSACTION", None, write=True)
                try:
                    yield
                except BaseException:
                    self._handle.run(conn, "ROLLBACK", None, write=True)
                    raise
                self._handle.run(conn, "COMMIT", None, write=True)
            self._maybe_checkpoint()

    def _ensure_open(self) -> None:
        if self._closed:
            raise GraphStoreError(f"The graph store for {self.path} is closed.")

    def _ensure_writable(self) -> None:
        self._ensure_open()
        if self.read_only:
            raise GraphStoreError(f"The graph store for {self.path} was opened read-only.")

    # -- meta ----------------------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = self.query("MATCH (m:Meta) WHERE m.key = $k RETURN m.value AS value", {"k": key})
        return rows[0]["value"] if rows else default

    def set_meta(self, key: str, value: str | int | float) -> None:
        self.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": str(value)})

    def delete_meta(self, key: str) -> None:
        self.execute("MATCH (m:Meta) WHERE m.key = $k DELETE m", {"k": key})

    # -- bulk loads ----------------------------------------------------------------------------------
    def existing_ids(self, table: str, ids: Sequence[str]) -> set[str]:
        """The subset of ``ids`` present as primary keys of node table ``table``."""
        pk = self._pk(table)
        unique = list(dict.fromkeys(ids))
        found: set[str] = set()
        for result in self._by_id_list(f"(n:{table})", f"n.{pk}", f"n.{pk}", unique):
            found.update(result.column(0).to_pylist())
        return found

    def _by_id_list(self, match: str, key: str, returns: str, ids: list[str], where: str = "", *,
                    vectors: bool = False) -> Iterator[pa.Table]:
        """Arrow results of ``MATCH match WHERE key in ids [AND where] RETURN returns``, one per
        statement of the batching policy (kgviz.graph.batching: IN for short lists, UNWIND beyond).
        Only catalog identifiers are interpolated; the ids are a $param."""
        rest = (f"AND {where} " if where else "") + f"RETURN {returns}"
        for cypher, batch in id_list_statements(match, key, rest, ids, vectors=vectors):
            yield self.query_arrow(cypher, {"ids": batch})

    def bulk_load_nodes(self, table: str, rows: Rows, *, new_rows: bool = False) -> int:
        """COPY rows into node table ``table``; rows whose key exists (in the graph or earlier in
        ``rows``) are skipped, so a load can be repeated. Returns the number of rows inserted.
        ``new_rows``: the caller knows every key is new and distinct, so none is looked up (a
        repeated key fails the COPY, which then loads nothing)."""
        self._ensure_writable()
        schema = self._node_table(table)
        pk = self._pk(table)
        sources, n_rows = column_sources(rows)
        if n_rows == 0:
            return 0
        if pk not in sources:
            raise GraphStoreError(f"bulk_load_nodes({table}): every row needs its key column '{pk}'.")
        # a vector column the rows do not give is left out of the COPY, which fills it with NULL
        # as a column of nulls would, without that column: Arrow's null FLOAT[768] column holds
        # 768 zeroed floats per row, 400 MB for a 131k-row batch, made, then read by Kùzu (issue
        # 29: the Entity, Triple, SubChunk and Keyword rows whose vectors are kept in files)
        columns = [(name, kind) for name, kind in schema if name in sources or vector_dim(kind) is None]
        arrow = build_table(sources, n_rows, columns, what=table)
        if arrow.column(pk).null_count:
            raise GraphStoreError(f"bulk_load_nodes({table}): a row has no '{pk}'.")
        copy = f"COPY {table} FROM $rows" if len(columns) == len(schema) else \
            f"COPY {table} ({', '.join(name for name, _ in columns)}) FROM $rows"
        with self.write_lock():
            if new_rows:  # no key is looked up, so none is made a Python string (issue 29)
                self._copy(copy, arrow)
                return n_rows
            keys = arrow.column(pk).to_pylist()
            present = self.existing_ids(table, keys)
            keep = [i for i, key in _first_occurrences(keys) if key not in present]
            if not keep:
                return 0
            if len(keep) < n_rows:
                arrow = arrow.take(pa.array(keep, type=pa.int64()))
            self._copy(copy, arrow)
        return len(keep)

    def bulk_load_rels(self, rel: str, rows: Rows, *, from_table: str, to_table: str) -> int:
        """COPY rows (keys "from", "to" + rel properties) into rel table ``rel``.

        A row equal to an existing edge — same endpoints and same non-float properties — is
        skipped, as are repeats within ``rows``; so a load can be repeated. Every endpoint must
        already exist. Returns the number of edges inserted.
        """
        self._ensure_writable()
        catalog = self._catalog()
        if rel not in catalog.rels:
            raise GraphStoreError(f"No rel table '{rel}'; rel tables: {sorted(catalog.rels)}")
        if (from_table, to_table) not in catalog.pairs[rel]:
            raise GraphStoreError(
                f"Rel table '{rel}' does not connect {from_table} -> {to_table}; it connects "
                f"{catalog.pairs[rel]}."
            )
        sources, n_rows = column_sources(rows)
        if n_rows == 0:
            return 0
        if "from" not in sources or "to" not in sources:
            raise GraphStoreError(f"bulk_load_rels({rel}): every row needs 'from' and 'to'.")
        props = catalog.rels[rel]
        schema = [("from", "STRING"), ("to", "STRING"), *props]
        arrow = build_table(sources, n_rows, schema, what=rel)
        key_props = [name for name, kuzu_type in props if not is_float_type(kuzu_type)]
        keys = list(zip(*(arrow.column(name).to_pylist() for name in ["from", "to", *key_props])))
        with self.write_lock():
            present = self._existing_edges(rel, from_table, to_table, key_props, keys)
            keep = [i for i, key in _first_occurrences(keys) if key not in present]
            if not keep:
                return 0
            if len(keep) < n_rows:
                arrow = arrow.take(pa.array(keep, type=pa.int64()))
            self._copy_edges("bulk_load_rels", rel, "$rows", from_table, to_table, arrow)
        return len(keep)

    def holds_rows(self, table: str, pair: tuple[str, str] | None = None) -> bool:
        """True when node table ``table`` has a row, or rel table ``table`` an edge (of ``pair``,
        (from table, to table), when given: each pair of a multi-pair table is loaded on its own)."""
        catalog = self._catalog()
        if table in catalog.nodes:
            match = f"(n:{table})"
        elif table in catalog.rels:
            a, b = pair if pair is not None else ("", "")
            match = f"({':' + a if a else ''})-[n:{table}]->({':' + b if b else ''})"
        else:
            raise GraphStoreError(f"No table '{table}'; tables: {sorted(catalog.nodes) + sorted(catalog.rels)}")
        return bool(self.query(f"MATCH {match} RETURN 1 AS x LIMIT 1"))

    def copy_edges_into_empty(self, rel: str, batches: Iterable[Rows], scratch: Path, *,
                              from_table: str, to_table: str) -> int:
        """Load every row of ``batches`` (keys "from", "to" + rel properties) into rel table ``rel``
        from ``from_table`` to ``to_table``, which holds no edge of that pair yet, with ONE COPY.
        Returns the edges loaded.

        Issue 29: a COPY into a rel table that already holds edges is slow in kuzu 0.11.3 and needs
        buffer-pool pages in proportion to the string properties already stored (the 100k build's
        FROM_CHUNK loads, 50k edges a COPY, filled a 2 GB pool by the 30th; one COPY of 1.5M edges
        fits 1 GB). So the rows go a batch at a time (one batch held) into a parquet file in
        ``scratch``, one row group per batch, and Kùzu reads the file in one COPY; the file is
        removed after, also when the COPY fails (a killed build's goes with its scratch folder).
        Nothing is looked up or skipped: the caller's edges must be distinct. (Node tables are not
        loaded this way: Kùzu reads a file's row groups in parallel, so node order would vary.)"""
        self._ensure_writable()
        catalog = self._catalog()
        if rel not in catalog.rels or (from_table, to_table) not in catalog.pairs[rel]:
            raise GraphStoreError(f"copy_edges_into_empty: no rel table '{rel}' from {from_table} to {to_table}.")
        schema = [("from", "STRING"), ("to", "STRING"), *catalog.rels[rel]]
        path = Path(tempfile.mkstemp(prefix=f"{rel}-", suffix=".parquet", dir=scratch)[1])
        try:
            n_rows = 0
            with self.write_lock():
                if self.holds_rows(rel, (from_table, to_table)):
                    raise GraphStoreError(f"copy_edges_into_empty({rel}): {from_table} -> {to_table} already holds rows.")
                writer: pq.ParquetWriter | None = None
                try:
                    for rows in batches:
                        sources, n = column_sources(rows)
                        if n == 0:
                            continue
                        if "from" not in sources or "to" not in sources:
                            raise GraphStoreError(f"copy_edges_into_empty({rel}): every row needs 'from' and 'to'.")
                        arrow = build_table(sources, n, schema, what=rel)
                        if writer is None:  # uncompressed: written once and read once, on the same disk
                            writer = pq.ParquetWriter(path, arrow.schema, compression="none", use_dictionary=False)
                        writer.write_table(arrow, row_group_size=n)
                        n_rows += n
                finally:
                    if writer is not None:
                        writer.close()
                if n_rows:
                    self._copy_edges("copy_edges_into_empty", rel, f"'{_literal(str(path))}'", from_table, to_table, None)
        finally:
            path.unlink(missing_ok=True)
        return n_rows

    def _existing_edges(
        self, rel: str, from_table: str, to_table: str, key_props: list[str], keys: list[tuple]
    ) -> set[tuple]:
        from_pk, to_pk = self._pk(from_table), self._pk(to_table)
        returns = ", ".join([f"a.{from_pk}", f"b.{to_pk}", *(f"r.{p}" for p in key_props)])
        sources = list(dict.fromkeys(key[0] for key in keys))
        found: set[tuple] = set()
        match = f"(a:{from_table})-[r:{rel}]->(b:{to_table})"
        for result in self._by_id_list(match, f"a.{from_pk}", returns, sources):
            found.update(zip(*(column.to_pylist() for column in result.columns)))
        return found

    def _copy_edges(self, caller: str, rel: str, source: str, from_table: str, to_table: str,
                    table: pa.Table | None) -> None:
        """COPY edges into ``rel`` from ``source`` ($rows with ``table``, or a quoted file path);
        an edge whose end is not in the graph is an error that says to load the nodes first."""
        try:
            self._copy(f"COPY {rel} FROM {source} (from='{from_table}', to='{to_table}')", table)
        except GraphStoreError as err:
            if "Unable to find primary key" in str(err):
                raise GraphStoreError(
                    f"{caller}({rel}): {err}",
                    hint=f"every 'from' must be a {from_table} and every 'to' a {to_table} "
                    "already in the graph: load the nodes first",
                ) from err
            raise

    def _copy(self, cypher: str, table: pa.Table | None) -> None:
        with self.write_lock():
            self._statement(cypher, None if table is None else {"rows": table}, write=True, fetch="none")
            self._maybe_checkpoint()

    # -- reads -----------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Row count of every node table and every rel table."""
        catalog = self._catalog()
        counts = {t: self.query(f"MATCH (n:{t}) RETURN count(n) AS c")[0]["c"] for t in catalog.nodes}
        for rel in catalog.rels:
            counts[rel] = self.query(f"MATCH ()-[r:{rel}]->() RETURN count(r) AS c")[0]["c"]
        return counts

    def get_embeddings(self, table: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """{id: float32 vector} for the ids that exist and have an embedding."""
        pk = self._pk(table)
        dim = self._embedding_dim(table)
        # from the exact search's vector file where it holds the stored vector bit for bit, for
        # any number of ids: a read by id list scans Kùzu's whole vector column, and even a
        # primary-key lookup was 1-8 ms a statement on HotpotQA (issue 29)
        out, unique = self.stored_vectors(table, list(dict.fromkeys(ids)))
        if len(unique) <= PK_LOOKUP_MAX:
            # a primary-key lookup reads one row; a list lookup scans the whole emb column (tens
            # of ms on a few thousand rows), which only pays off for longer lists
            for node_id in unique:
                rows = self.query(f"MATCH (n:{table} {{{pk}: $id}}) WHERE n.emb IS NOT NULL RETURN n.emb AS emb",
                                  {"id": node_id})
                if rows:
                    out[node_id] = np.asarray(rows[0]["emb"], dtype=np.float32)
            return out
        for result in self._by_id_list(f"(n:{table})", f"n.{pk}", f"n.{pk}, n.emb", unique, "n.emb IS NOT NULL",
                                       vectors=True):
            matrix = vectors_to_numpy(result.column(1), dim)
            out.update(zip(result.column(0).to_pylist(), matrix))
        return out

    # -- search (kgviz.graph.search) ---------------------------------------------------------------
    def has_vector_index(self, table: str) -> bool:
        return search.has_vector_index(self, table)

    def ensure_vector_index(self, table: str) -> str:
        """Cosine HNSW index on ``table.emb``; a no-op when it exists (it follows later inserts).
        Returns search.PRESENT or CREATED."""
        return search.ensure_vector_index(self, table)

    def vector_search(self, table: str, vector: Sequence[float] | np.ndarray, k: int, *,
                      where: Mapping[str, Any] | None = None) -> list[tuple[str, float]]:
        """Nearest rows of ``table`` by cosine similarity: [(id, similarity)], best first (see
        ``kgviz.graph.search.vector_search``)."""
        return search.vector_search(self, table, vector, k, where=where)

    def stored_vectors(self, table: str, ids: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str]]:
        """({id: stored vector} read from the exact search's vector file, ids left to read from
        Kùzu); see ``kgviz.graph.search.stored_vectors``."""
        return search.stored_vectors(self, table, ids)

    def unit_vectors(self, table: str, ids: Sequence[str]) -> dict[str, np.ndarray] | None:
        """{id: unit row} from the exact search's memory-mapped matrix, None when ``table`` has
        none; see ``kgviz.graph.search.unit_vectors``."""
        return search.unit_vectors(self, table, ids)

    def ensure_fts_index(self, table: str = "Chunk", columns: Sequence[str] = ("text",)) -> str:
        """BM25 index over ``columns`` of ``table``; idempotent, and it repairs what an interrupted
        creation left (see kgviz.graph.search.FTS_NAME_ATTEMPTS). Returns search.PRESENT, CREATED
        or REPAIRED."""
        return search.ensure_fts_index(self, table, columns)

    def fts_search(self, query: str, k: int, table: str = "Chunk") -> list[tuple[str, float]]:
        """BM25 search: [(id, score)], best first (see ``kgviz.graph.search.fts_search``)."""
        return search.fts_search(self, query, k, table)

    def _embedding_dim(self, table: str) -> int:
        dim = vector_dim(self._column(table, "emb"))
        if dim is None:
            raise GraphStoreError(f"Column {table}.emb is not a vector column.")
        return dim


def _literal(text: str) -> str:
    """``text`` inside a Cypher string literal (a file path this module made: COPY takes no $param)."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _first_occurrences(keys: Sequence[Any]) -> Iterator[tuple[int, Any]]:
    seen: set[Any] = set()
    for i, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            yield i, key
