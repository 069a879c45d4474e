"""A build killed with SIGKILL mid-extraction resumes without duplicates or repeated calls."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.index_fakes import ScriptedLLM, corpus
from kgviz.graph.store import GraphStore
from kgviz.index.pipeline import BuildParams, build
from kgviz.providers.embedders import HashingEmbedder
from kgviz.reasoning import Reasoner

pytestmark = pytest.mark.slow  # kills a build process mid-way and resumes it

ROOT = Path(__file__).resolve().parents[2]
# ket_descriptions off: these tests count extraction calls (the skeleton's descriptions are one more call
# per chunk, tested in test_ket_describe.py)
PARAMS = dict(chunk_tokens=24, chunk_overlap=0, workers=1, batch_size=1, similar_docs_k=2, flush_interval_s=0.0,
              ket_descriptions=False)

CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})  # the child is a plain script: tests.support and kgviz from the checkout
    from tests.support.index_fakes import ScriptedLLM, corpus
    from kgviz.graph.store import GraphStore
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.reasoning import Reasoner

    emb = HashingEmbedder(64)
    store = GraphStore.open({db!r}, embedder_id=emb.id, dim=emb.dim)

    def progress(ev):
        print(ev.stage, ev.done, ev.total, flush=True)

    build(corpus(), store, Reasoner(ScriptedLLM(delay_s=0.3), emb), BuildParams(**{params!r}), progress=progress)
    print("finished", flush=True)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_killed_build_resumes_to_the_clean_result(tmp_path: Path) -> None:
    db = tmp_path / "killed"
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=str(ROOT), db=str(db), params=PARAMS))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    killed_at = None
    assert proc.stdout is not None
    for line in proc.stdout:
        stage, done, _total = line.split()[:3] if line.count(" ") >= 2 else (line.strip(), "0", "0")
        if stage == "extract" and int(done) >= 3:
            os.kill(proc.pid, signal.SIGKILL)
            killed_at = int(done)
            break
        assert stage != "finished" and time.monotonic() < deadline
    proc.wait(timeout=30)
    assert killed_at is not None and proc.returncode == -signal.SIGKILL

    emb = HashingEmbedder(64)
    store = GraphStore.open(db, embedder_id=emb.id, dim=emb.dim)
    clean_store = GraphStore.open(tmp_path / "clean", embedder_id=emb.id, dim=emb.dim)
    try:
        before = store.counts()
        assert before["Extraction"] >= killed_at - 1 and before["Document"] == 0
        llm = ScriptedLLM()
        resumed = build(corpus(), store, Reasoner(llm, emb), BuildParams(**PARAMS))
        clean = build(corpus(), clean_store, Reasoner(ScriptedLLM(), emb), BuildParams(**PARAMS))
        assert resumed.counts == clean.counts
        assert llm.calls == clean.counts["Chunk"] - before["Extraction"]
        ids = [r["id"] for r in store.query("MATCH (t:Triple) RETURN t.id AS id")]
        assert len(ids) == len(set(ids))
    finally:
        store.close()
        clean_store.close()
