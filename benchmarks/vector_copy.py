"""What a 768-float vector column costs Kùzu's COPY (issue 29: why kgviz.graph.vector_home keeps the
Entity and Triple vectors out of Kùzu).

    python benchmarks/vector_copy.py MODE [ROWS]     # one mode per process, so its peak RSS is its own

Loads ROWS (default 131,072: the build's write batch) Triple-like rows (id, text) twice into a
fresh database, as two COPYs from an Arrow table, and prints one JSON line: COPY wall and CPU
seconds, the process's peak RSS and the database's size after a checkpoint. MODE:

* ``emb``: with an ``emb FLOAT[768]`` column of hashing vectors of HotpotQA sentences (what a
  build loaded before);
* ``noemb``: without it (what a build loads now);
* ``emb-nocompression``: with the column, the database opened with ``compression=False``;
* ``emb-parquet``: with the column, each batch written to an uncompressed Parquet file that Kùzu
  reads (the write included).

The texts are HotpotQA dev passages' sentences (``../shared/data/hotpotqa/corpus.jsonl``, or
``$KGVIZ_DATA/hotpotqa``), repeated up to ROWS.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODES = ("emb", "noemb", "emb-nocompression", "emb-parquet")
DIM = 768
DISTINCT_VECTORS = 20_000  # sentences embedded; the rows repeat them


def _data() -> Path:
    return Path(os.environ.get("KGVIZ_DATA") or ROOT.parent / "shared" / "data") / "hotpotqa" / "corpus.jsonl"


def _texts(n: int) -> list[str]:
    out: list[str] = []
    with open(_data(), encoding="utf-8") as f:
        for line in f:
            text = json.loads(line).get("text", "")
            out.extend(s.strip() for s in text.split(".") if len(s.strip()) > 10)
    return (out * (n // max(len(out), 1) + 1))[:n]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in MODES:
        print(__doc__)
        return 2
    mode, n = argv[0], int(argv[1]) if len(argv) > 1 else 131_072
    import kuzu  # a benchmark of Kùzu itself: the store's own code is not what is measured

    from kgviz.providers.embedders import HashingEmbedder

    texts = _texts(n)
    columns: dict[str, pa.Array] = {"id": pa.array([f"t{i:08d}" for i in range(n)]), "text": pa.array(texts)}
    if mode != "noemb":
        distinct = HashingEmbedder(DIM).embed(texts[:DISTINCT_VECTORS])
        rows = np.resize(distinct, (n, DIM)).astype(np.float32)
        columns["emb"] = pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1)), DIM)
    table = pa.table(columns)
    folder = Path(tempfile.mkdtemp(prefix="kgviz_vector_copy_"))
    try:
        db = kuzu.Database(str(folder / "db"), compression=mode != "emb-nocompression", max_num_threads=2)
        conn = kuzu.Connection(db)
        conn.execute("CREATE NODE TABLE T(id STRING PRIMARY KEY, text STRING"
                     + (f", emb FLOAT[{DIM}]" if mode != "noemb" else "") + ")")
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        for batch in range(2):
            if batch:
                table = table.set_column(0, "id", pa.array([f"u{i:08d}" for i in range(n)]))
            if mode == "emb-parquet":
                path = folder / f"batch{batch}.parquet"
                pq.write_table(table, path, row_group_size=n, compression="none", use_dictionary=False)
                conn.execute(f"COPY T FROM '{path}'")
            else:
                conn.execute("COPY T FROM $rows", {"rows": table})
        wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
        conn.execute("CHECKPOINT")
        size_mb = int(subprocess.run(["du", "-sm", str(folder / "db")], capture_output=True, text=True).stdout.split()[0])
        print(json.dumps({"mode": mode, "rows": 2 * n, "copy_wall_s": round(wall, 2),
                          "copy_cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 2),
                          "peak_rss_mb": r1.ru_maxrss // 1024, "db_mb": size_mb}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
