"""Embedders: an offline hashing embedder and a fastembed (ONNX) embedder.

HashingEmbedder needs no model: lower-cased word unigrams and bigrams, signed feature hashing
with blake2b (Python's ``hash()`` is salted per process, so it would not be deterministic),
sublinear term frequency 1 + log(tf), English stopwords down-weighted, rows L2-normalised.

FastEmbedEmbedder loads a fastembed TextEmbedding. When the model hub is unreachable fastembed
retries for ~40 s before failing, so loading runs in a daemon thread and the caller waits at most
``load_timeout_s``; on timeout or failure it raises EmbedderUnavailableError with the reason
(``factory.make_embedder`` turns that into a visible fallback). A load that is still running, or
that succeeded, is reused by the next attempt instead of starting another one, so a download that
finishes late is picked up on the next try and each model is loaded once per process.
``local_only=True`` (what the ``auto`` spec uses) never contacts the hub: a model directory is
read as is and the cache is read with ``local_files_only``, so a missing model fails at once.
"""
from __future__ import annotations

import hashlib
import math
import mmap
import os
import re
import threading
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from kgviz.errors import EmbedderUnavailableError
from kgviz.provider_specs import DEFAULT_FASTEMBED_MODEL, DEFAULT_HASH_DIM  # the specs' defaults, defined there
from kgviz.provider_specs import INT8_ACTIVATIONS, INT8_FUSED, split_variant, variant_name
# the hashing embedder's own list: a stored vector must equal the query's under one embedder id
from kgviz.offline.stopwords import ENGLISH as STOPWORDS

# ---------------------------------------------------------------------------------------------
# hashing
# ---------------------------------------------------------------------------------------------
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)  # "Curie's" -> "curie", "s": the name still matches
STOPWORD_WEIGHT = 0.2  # ours: stopwords keep a little signal ("to be or not to be")
MIXED_BIGRAM_WEIGHT = 0.6  # ours: "president of" says less than "united states"
_FEATURE_CACHE_MAX = 200_000  # remembered feature codes (~30 MB) before starting over
# Remembered vectors (a row depends on its text alone): a comparison embeds the same evidence
# sentences for every method's answer step, and later questions meet the same passages again.
_ROW_CACHE_MAX = 8_192  # rows of 768 float32 = ~25 MB, then starting over
_ROW_CACHE_BATCH = 1_024  # larger batches (a build embedding whole tables once) bypass the cache


class HashingEmbedder:
    """Deterministic bag-of-n-grams vectors. id encodes the dimension: ``hashing-<dim>``."""

    rows_depend_on_text_alone = True  # a row is its text's features alone (kgviz.index.embed)

    def __init__(self, dim: int = DEFAULT_HASH_DIM) -> None:
        if dim < 16:
            raise ValueError(f"hashing dimension must be at least 16, got {dim}")
        self.dim = int(dim)
        self.id = f"hashing-{self.dim}"
        self._features: dict[str, int] = {}  # feature -> its _codes value
        self._rows: dict[str, np.ndarray] = {}

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"

    def __getstate__(self) -> dict[str, object]:
        # sent to build worker processes (kgviz.index.embed): the caches are a speed-up of this
        # process only, and would be pickled with every batch
        return {"dim": self.dim, "id": self.id, "_features": {}, "_rows": {}}

    def _slot(self, feature: str) -> tuple[int, float]:
        """(column, sign) of a feature: blake2b of its UTF-8 bytes."""
        h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
        return h % self.dim, 1.0 if h >> 63 else -1.0

    def _codes(self, features: Sequence[str]) -> list[int]:
        """column x 8 + the index in _SIGNED of (sign x stopword factor) of each feature: what
        ``_slot`` and ``_weight(feature, 1)`` give, in one loop (a feature's term frequency only
        scales that value, so this runs once per distinct feature while it is remembered)."""
        dim = self.dim
        blake2b = hashlib.blake2b
        stop = STOPWORDS
        codes = []
        for feature in features:
            h = int.from_bytes(blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
            if " " in feature:
                a, b = feature.split(" ", 1)
                stops = (a in stop) + (b in stop)
                k = 2 if stops == 2 else 4 if stops == 1 else 0  # 0.2, 0.6 or 1.0 in _SIGNED
            else:
                k = 2 if feature in stop else 0
            codes.append((h % dim) * 8 + k + (0 if h >> 63 else 1))  # odd: the negative sign
        return codes

    def features(self, text: str) -> Counter[str]:
        words = _WORD_RE.findall(text.lower())
        counts: Counter[str] = Counter(words)
        counts.update(map(" ".join, zip(words, words[1:])))
        return counts

    @staticmethod
    def _weight(feature: str, tf: int) -> float:
        w = 1.0 + math.log(tf)
        if " " in feature:
            a, b = feature.split(" ", 1)
            stops = (a in STOPWORDS) + (b in STOPWORDS)
            if stops == 2:
                w *= STOPWORD_WEIGHT
            elif stops == 1:
                w *= MIXED_BIGRAM_WEIGHT
        elif feature in STOPWORDS:
            w *= STOPWORD_WEIGHT
        return w

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0 or len(texts) > _ROW_CACHE_BATCH:
            return self._embed(texts)
        known = self._rows  # shared by threads: read once per text, so a clear elsewhere loses nothing here
        rows = {t: v for t in dict.fromkeys(texts) if (v := known.get(t)) is not None}
        missing = [t for t in dict.fromkeys(texts) if t not in rows]
        if missing:
            fresh = dict(zip(missing, self._embed(missing)))
            if len(known) + len(fresh) > _ROW_CACHE_MAX:
                known.clear()  # only a speed-up: losing it changes no vector
            known.update(fresh)
            rows.update(fresh)
        return np.stack([rows[t] for t in texts])

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        # value = sign x weight(feature, tf) = (1 + log tf) x (sign x factor): multiplying by
        # the sign (+-1) is exact, so this is bit for bit the product the weight and sign give
        # separately; (1 + log tf) comes from a table made with math.log, and numpy's float64
        # product is the IEEE one Python's is. The features of a row are summed in the same
        # order (np.bincount adds its weights in input order, as np.add.at did), so the vectors
        # are unchanged (issue 29: the hashing embedder was a third of an offline build; the
        # per-feature Python loop is now one cache lookup per feature through map)
        dim = self.dim
        keys: list[str] = []
        tfs: list[int] = []
        sizes: list[int] = []
        for text in texts:
            counts = self.features(text)
            keys += counts
            tfs += counts.values()
            sizes.append(len(counts))
        n = len(texts)
        if not keys:
            return l2_normalise(np.zeros((n, dim), dtype=np.float64))
        known = self._features  # feature -> _codes, remembered
        codes = list(map(known.get, keys))
        if None in codes:
            missing = list(dict.fromkeys(k for k, c in zip(keys, codes) if c is None))  # each once, in order
            fresh = dict(zip(missing, self._codes(missing)))
            codes = [fresh[k] if c is None else c for k, c in zip(keys, codes)]
            if len(known) + len(fresh) > _FEATURE_CACHE_MAX:
                known.clear()  # only a speed-up: losing it changes no vector
            known.update(fresh)
        coded = np.asarray(codes, dtype=np.int64)
        tf = np.asarray(tfs, dtype=np.int64)
        vals = _tf_scale(int(tf.max()))[tf] * _SIGNED_VALUES[coded & 7]
        flat = np.repeat(np.arange(n, dtype=np.int64) * dim, sizes) + (coded >> 3)
        return l2_normalise(np.bincount(flat, weights=vals, minlength=n * dim).reshape(n, dim))


# (sign x stopword factor) of a feature: the sign is +-1 and _weight(feature, 1) is exactly the factor
_SIGNED = (1.0, -1.0, STOPWORD_WEIGHT, -STOPWORD_WEIGHT, MIXED_BIGRAM_WEIGHT, -MIXED_BIGRAM_WEIGHT)
_SIGNED_VALUES = np.array(_SIGNED + (0.0, 0.0), dtype=np.float64)
_TF_SCALE = np.array([0.0, 1.0], dtype=np.float64)  # [tf] = 1 + log(tf), grown on demand


def _tf_scale(max_tf: int) -> np.ndarray:
    """1 + math.log(tf) for tf up to ``max_tf`` (index 0 unused), the values _weight uses."""
    global _TF_SCALE
    table = _TF_SCALE  # shared by threads: a reader keeps the table it took
    if max_tf >= len(table):
        size = max(max_tf + 1, 2 * len(table))
        table = np.array([0.0] + [1.0 + math.log(t) for t in range(1, size)], dtype=np.float64)
        _TF_SCALE = table
    return table


NORMALISE_ROWS = 256  # rows normalised at a time (ours): 256 x 768 float64 is 1.5 MB, inside the cache


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """float32 rows of unit length; all-zero rows stay zero. Each row is divided by its float64
    norm (``np.linalg.norm``) in float64, then rounded to float32. A block of NORMALISE_ROWS
    rows at a time, inside the cache (issue 29: 55k x 768 keyword vectors at 10k passages took 0.20 s
    CPU as whole-matrix float64 copies, 0.07 s in blocks, benchmarks/ket_layer_speed.py); a row's
    values do not depend on the rows beside it."""
    m = np.asarray(matrix)
    if m.ndim != 2:  # not a matrix: as a whole, as before (a vector raises numpy's AxisError)
        whole = np.asarray(m, dtype=np.float64)
        whole_norms = np.linalg.norm(whole, axis=1, keepdims=True)
        whole_norms[whole_norms == 0] = 1.0
        return (whole / whole_norms).astype(np.float32)
    out = np.empty(m.shape, dtype=np.float32)
    work = np.empty((min(NORMALISE_ROWS, m.shape[0]), m.shape[1]), dtype=np.float64)
    for a in range(0, m.shape[0], NORMALISE_ROWS):
        block = np.asarray(m[a:a + NORMALISE_ROWS], dtype=np.float64)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        quotient = work[:len(block)]
        np.divide(block, norms, out=quotient)
        out[a:a + len(block)] = quotient
    return out


# ---------------------------------------------------------------------------------------------
# fastembed
# ---------------------------------------------------------------------------------------------
DEFAULT_LOAD_TIMEOUT_S = 5.0
# ours: a batch is padded to its longest text, and attention memory grows with batch x length^2
# (MiniLM truncates at 512 tokens). Texts are therefore sorted by their token count and cut into
# batches by padded tokens (texts x the batch's longest), not by a count: short texts go many to a
# batch, where the matrix products run efficiently, and a 512-token text goes with few. Measured
# with all-MiniLM-L6-v2 int8 on HotpotQA's first 400 passages, 2 cores at load 17-25, before (char-sorted
# batches of 8 on onnxruntime's own pool) -> after in one run (benchmarks/embedders.py --against):
# 10.4 -> 17.3 passages per CPU second, 2.2 -> 3.2 passages/s, peak RSS 925 -> ~1,300 MB; 1024-8192
# padded tokens per batch measured 3.9-5.1 passages/s at load 18 (one pass each), 4096 the fastest.
DEFAULT_BATCH_TOKENS = 4096
# ours: the int8-fused variant's kernels run from the cache, so smaller batches pay: on HotpotQA's
# first 400 passages, one onnxruntime thread, load ~3 (alternating runs), 4,096 padded tokens per
# batch gave 58-61 passages per CPU second, 512-1,536 gave 70-75. Its own default, so the other
# embedders' batches (and the int8-activations vectors, whose 8-bit scale is the batch's) stay as
# they were.
FUSED_BATCH_TOKENS = 1024
DEFAULT_FASTEMBED_BATCH = 64  # at most this many texts in one batch, however short


def usable_cores() -> int:
    """The CPUs this process may run on (a container's limit, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def plan_batches(lengths: Sequence[int], max_tokens: int, max_texts: int) -> list[list[int]]:
    """The indices of ``lengths`` (token counts) grouped into batches, shortest texts first: a
    batch holds at most ``max_texts`` texts and at most ``max_tokens`` padded tokens (its size
    times its longest text); a text longer than ``max_tokens`` on its own goes alone. Equal
    lengths keep their input order, so the same texts always get the same plan."""
    if max_tokens < 1 or max_texts < 1:
        raise ValueError(f"batch limits must be positive, got max_tokens={max_tokens}, max_texts={max_texts}")
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: (lengths[i], i)):
        # sorted ascending: text i is the longest of current + [i], so it sets the padded length
        if current and (len(current) >= max_texts or (len(current) + 1) * lengths[i] > max_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


_PENDING: dict[tuple[str, ...], Future[Any]] = {}
_PENDING_LOCK = threading.Lock()


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES", "ON"}


def describe_model(model: str) -> dict[str, Any]:
    """fastembed's description of ``model`` (dim, sources, model_file); EmbedderUnavailableError
    when fastembed does not know it."""
    from fastembed import TextEmbedding

    for desc in TextEmbedding.list_supported_models():
        if str(desc.get("model", "")).lower() == model.lower():
            return desc
    raise EmbedderUnavailableError(
        f"fastembed does not know the model {model!r}",
        hint="use a name from fastembed's TextEmbedding.list_supported_models(), e.g. BAAI/bge-small-en-v1.5",
    )


def _check_model_dir(model: str, model_dir: Path, desc: dict[str, Any]) -> None:
    if not model_dir.is_dir():
        raise EmbedderUnavailableError(
            f"the fastembed model directory {model_dir} does not exist",
            hint="check the path after '@' in the embedder spec fastembed:<model>@<dir>",
        )
    needed = [str(desc.get("model_file") or "model.onnx"), "tokenizer.json"]
    missing = [name for name in needed if not (model_dir / name).is_file()]
    if missing:
        raise EmbedderUnavailableError(
            f"the fastembed model directory {model_dir} lacks {', '.join(missing)} for {model}",
            hint="the directory must hold the model's ONNX file and its tokenizer files",
        )


# The op_type field of an ONNX NodeProto (field 4, length-delimited: tag 0x22) holding
# "MatMulInteger" (13 bytes): how the op type is serialised, so a byte search finds the node
# without parsing the graph (the ``onnx`` package is not needed to load a model).
_MATMUL_INTEGER_OP = b'"\rMatMulInteger'


# Likewise "MultiHeadAttention" (18 bytes): the fused attention of the int8-fused variant.
_MULTI_HEAD_ATTENTION_OP = b'"\x12MultiHeadAttention'


def has_integer_matmuls(model_file: Path) -> bool:
    """Whether the ONNX file holds a MatMulInteger node (a byte search, ~10 ms for 23 MB)."""
    return graph_variant(model_file) is not None


def graph_variant(model_file: Path) -> str | None:
    """Which of kgviz's variants the ONNX file holds, read from its op types (byte searches):
    ``None`` (no MatMulInteger: fp32 matrix products), INT8_FUSED (MatMulInteger and the fused
    MultiHeadAttention, ``kgviz.providers.encoder_fusion``) or INT8_ACTIVATIONS (MatMulInteger only)."""
    with model_file.open("rb") as fh:
        if model_file.stat().st_size == 0:
            return None
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data.find(_MATMUL_INTEGER_OP) < 0:
                return None
            return INT8_FUSED if data.find(_MULTI_HEAD_ATTENTION_OP) >= 0 else INT8_ACTIVATIONS


def _check_variant(model: str, variant: str | None, model_file: Path) -> None:
    """Refuse a directory whose graph is not the variant the spec names: integer matrix products
    (MatMulInteger) under the fp32 name, fp32 ones under a variant's name, or one variant's graph
    under the other's name. The id records the name, so vectors of two graphs are never stored or
    compared under one id."""
    held = graph_variant(model_file)
    if held == variant:
        return
    base = split_variant(model)[0]
    if variant is None:
        raise EmbedderUnavailableError(
            f"the model directory {model_file.parent} holds the {held} variant of {model} (integer "
            f"matrix products), whose vectors differ from {model}'s",
            hint=f"name it fastembed:{variant_name(model, held or INT8_ACTIVATIONS)}@{model_file.parent}",
        )
    if held is None:
        raise EmbedderUnavailableError(
            f"the model directory {model_file.parent} holds no integer matrix products: it is "
            f"not the {variant} variant of {base}",
            hint=f"name it fastembed:{base}@{model_file.parent}, or make the variant with "
                 f"kgviz models pull --{variant} (or python scripts/make_minilm_dir.py DIR --{variant} VARIANT_DIR)",
        )
    raise EmbedderUnavailableError(
        f"the model directory {model_file.parent} holds the {held} variant of {base}, not the {variant} "
        f"one: their vectors differ",
        hint=f"name it fastembed:{variant_name(base, held)}@{model_file.parent}, or make the {variant} variant "
             f"with kgviz models pull --{variant} (or python scripts/make_minilm_dir.py DIR --{variant} VARIANT_DIR)",
    )


def _load(model: str, model_dir: Path | None, cache_dir: str | None, threads: int | None,
          local_only: bool = False) -> Any:
    from fastembed import TextEmbedding

    if model_dir is not None:
        return TextEmbedding(model, threads=threads, specific_model_path=str(model_dir))
    try:  # a model already in the local cache loads without touching the network
        return TextEmbedding(model, cache_dir=cache_dir, threads=threads, local_files_only=True)
    except Exception as exc:  # fastembed raises ValueError and friends; the online try follows
        if local_only:
            raise EmbedderUnavailableError(
                f"fastembed model {model} is not in the local cache {cache_dir or '(fastembed default)'}: "
                f"{type(exc).__name__}: {str(exc)[:200]}",
                hint="nothing is downloaded here; point KGVIZ_EMBEDDER_DIR to a local copy",
            ) from exc
        if _hub_offline():
            raise EmbedderUnavailableError(
                f"fastembed model {model} is not in the local cache and HF_HUB_OFFLINE is set ({exc})",
                hint="unset HF_HUB_OFFLINE to download it, or point to a local copy with fastembed:<model>@<dir>",
            ) from exc
    return TextEmbedding(model, cache_dir=cache_dir, threads=threads)


def _start_load(key: tuple[str, ...], *args: Any) -> Future[Any]:
    """The pending load for ``key``, starting one only if none is running or succeeded."""
    with _PENDING_LOCK:
        fut = _PENDING.get(key)
        if fut is not None and not (fut.done() and fut.exception() is not None):
            return fut
        fut = Future()
        _PENDING[key] = fut

    def run() -> None:
        try:
            fut.set_result(_load(*args))
        except BaseException as exc:  # handed to the waiting caller, not swallowed
            fut.set_exception(exc)

    threading.Thread(target=run, name=f"kgviz-fastembed-load-{key[0]}", daemon=True).start()
    return fut


class FastEmbedEmbedder:
    """fastembed TextEmbedding behind the Embedder protocol. id: ``fastembed:<model>`` (a local
    directory holding the same model gives the same vectors, so the id does not name it).
    ``<model>+int8-activations`` names the variant ``kgviz.providers.int8_activations`` makes (integer
    matrix products), ``<model>+int8-fused`` the one with fused encoder kernels too; each loads from
    its directory only, and its id keeps the suffix.

    ``embed`` computes one vector per distinct text, cuts the texts into length-sorted batches
    (``plan_batches``: at most ``batch_size`` texts and ``batch_tokens`` padded tokens each; by
    default DEFAULT_BATCH_TOKENS, FUSED_BATCH_TOKENS for the int8-fused variant) and
    runs ``workers`` batches at once, each on ``threads`` onnxruntime threads (default: one thread
    per worker when there are several workers; onnxruntime's own choice, all cores, for one).
    Rows come back in the caller's order."""

    def __init__(
        self,
        model: str = DEFAULT_FASTEMBED_MODEL,
        model_dir: str | Path | None = None,
        *,
        load_timeout_s: float = DEFAULT_LOAD_TIMEOUT_S,
        cache_dir: str | Path | None = None,
        threads: int | None = None,
        workers: int | None = None,
        batch_size: int = DEFAULT_FASTEMBED_BATCH,
        batch_tokens: int | None = None,
        local_only: bool = False,
    ) -> None:
        self.model = model
        self.model_dir = Path(model_dir).expanduser() if model_dir else None
        self.id = f"fastembed:{model}"
        self.workers = usable_cores() if workers is None else int(workers)
        if threads is None and self.workers > 1:
            threads = 1  # ours: the workers already fill the cores; more threads would only contend
        base, variant = split_variant(model)  # "<model>+int8-activations": a variant kgviz makes locally
        if batch_tokens is None:
            batch_tokens = FUSED_BATCH_TOKENS if variant == INT8_FUSED else DEFAULT_BATCH_TOKENS
        if self.workers < 1 or batch_size < 1 or batch_tokens < 1 or (threads is not None and threads < 1):
            raise ValueError(f"workers, threads, batch_size and batch_tokens must be positive "
                             f"(got {workers}, {threads}, {batch_size}, {batch_tokens})")
        self.threads = threads
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        desc = describe_model(base)
        self.dim = int(desc["dim"])
        if self.model_dir is not None:
            _check_model_dir(model, self.model_dir, desc)
            _check_variant(model, variant, self.model_dir / str(desc.get("model_file") or "model.onnx"))
        elif variant is not None:
            raise EmbedderUnavailableError(
                f"fastembed model {model} is made locally, so it needs its directory: fastembed:{model}@<dir>",
                hint=f"make one with kgviz models pull --{variant} (`kgviz models status` then prints its "
                     f"spec) or python scripts/make_minilm_dir.py DIR --{variant} VARIANT_DIR, "
                     f"then use fastembed:{model}@VARIANT_DIR",
            )
        cache = str(cache_dir) if cache_dir else None
        key = (model, str(self.model_dir or ""), cache or "", "local" if local_only else "hub", str(threads))
        fut = _start_load(key, base, self.model_dir, cache, threads, local_only)
        try:
            self._model = fut.result(timeout=load_timeout_s)
        except FutureTimeout:
            shown = round(load_timeout_s, 1)  # a share of auto's budget: 19.98 s reads as 20 s
            if local_only or self.model_dir is not None:  # no hub involved: the load itself is slow
                raise EmbedderUnavailableError(
                    f"fastembed model {model} did not load from {self.model_dir or 'the local cache'} "
                    f"within {shown:g} s (a busy machine, or a very large model)",
                    hint="try again (the load goes on in the background and is reused), or pick a smaller model",
                ) from None
            raise EmbedderUnavailableError(
                f"fastembed model {model} did not load within {shown:g} s: it is not in the "
                "local cache and the model hub did not deliver it in time (no network?)",
                hint="download it once with network access (or allow a longer load timeout), or point "
                "to a local copy with fastembed:<model>@<dir>",
            ) from None
        except EmbedderUnavailableError:
            raise
        except Exception as exc:  # whatever fastembed / onnxruntime raised while loading
            raise EmbedderUnavailableError(
                f"fastembed model {model} could not be loaded: {type(exc).__name__}: {str(exc)[:300]}",
                hint="check the model name and, for fastembed:<model>@<dir>, the directory's files",
            ) from exc
        self._token_lengths = _length_counter(self._model, model)
        # one embed call at a time: its batches already occupy every worker
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        where = f", model_dir={str(self.model_dir)!r}" if self.model_dir else ""
        return f"FastEmbedEmbedder(model={self.model!r}{where})"

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        return np.vstack(list(self._model.embed(batch, batch_size=len(batch))))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        distinct = list(dict.fromkeys(texts))  # a text repeated in the call is embedded once
        row_of = {text: row for row, text in enumerate(distinct)}
        batches = plan_batches(self._token_lengths(distinct), self.batch_tokens, self.batch_size)
        jobs = [[distinct[i] for i in batch] for batch in batches]
        with self._lock:
            if self.workers > 1 and len(jobs) > 1:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="kgviz-embed")
                parts = list(self._pool.map(self._embed_batch, jobs))  # onnxruntime releases the GIL
            else:
                parts = [self._embed_batch(job) for job in jobs]
        unique = np.empty((len(distinct), self.dim), dtype=np.float32)
        for batch, part in zip(batches, parts):
            if part.shape != (len(batch), self.dim):
                raise EmbedderUnavailableError(
                    f"fastembed model {self.model} returned vectors of shape {part.shape}, "
                    f"expected ({len(batch)}, {self.dim})"
                )
            unique[batch] = part
        return l2_normalise(unique[[row_of[t] for t in texts]])  # back to the caller's order


def _length_counter(loaded: Any, model: str) -> Callable[[list[str]], list[int]]:
    """A function giving each text's token count as the model sees it (after truncation): a copy
    of the model's own tokenizer with padding switched off, which fastembed's would add."""
    inner = getattr(loaded, "model", None)
    tokenizer = getattr(inner, "tokenizer", None)
    if tokenizer is None:
        raise EmbedderUnavailableError(
            f"fastembed model {model} exposes no tokenizer to count tokens with",
            hint="kgviz needs the fastembed version pinned in pyproject.toml",
        )
    from tokenizers import Tokenizer

    counter = Tokenizer.from_str(tokenizer.to_str())
    counter.no_padding()

    def lengths(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in counter.encode_batch(texts)]

    return lengths
