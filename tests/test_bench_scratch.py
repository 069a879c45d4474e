"""A benchmark that builds its own workspace removes it when it ends (benchmarks/retrieval_latency.py,
which ``kgviz bench`` runs at every call, left ~16 MB per run in the temp folder, HotpotQA ~0.5 GB)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_retrieval_latency_removes_the_workspace_it_built(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "retrieval_latency.py"), "--corpus", "fixture",
                          "--n", "1", "--methods", "text-rag"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TMPDIR": str(scratch)}, check=True)
    assert json.loads(out.stdout)["methods"]["text-rag"]["n"] == 1  # it ran, on a graph it built there
    assert list(scratch.iterdir()) == []
