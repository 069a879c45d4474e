"""A build whose offline extraction and embeddings run in worker processes (kgviz.index.processes),
from a plain script that builds at its top level (multiprocessing's spawn and forkserver would run
it again in every worker), SIGKILLed mid-extraction: its workers end, and a re-run resumes to the
graph a clean build gives."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.index_fakes import corpus
from tests.support.proc import child_pids
from kgviz.graph.store import GraphStore
from kgviz.index.pipeline import BuildParams, build
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner

pytestmark = pytest.mark.slow  # kills a build process mid-way and resumes it

ROOT = Path(__file__).resolve().parents[2]
PARAMS = dict(chunk_tokens=24, chunk_overlap=0, workers=2, batch_size=1, similar_docs_k=2, flush_interval_s=0.0,
              ket_descriptions=False)

CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})  # the child is a plain script: tests.support and kgviz from the checkout
    from tests.support import worker_tasks
    from tests.support.index_fakes import corpus
    from kgviz.graph.store import GraphStore
    from kgviz.index import embed, extract
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    extract.OFFLINE_PROCESS_MIN_CHUNKS = 3
    extract.OFFLINE_BATCH = 1
    extract.extract_offline_batch = worker_tasks.slow_extract_batch
    embed.EMBED_PROCESS_MIN_TEXTS = 3
    emb = HashingEmbedder(64)
    store = GraphStore.open({db!r}, embedder_id=emb.id, dim=emb.dim)

    def progress(ev):
        print(ev.stage, ev.done, ev.total, flush=True)

    build(corpus(), store, Reasoner(OfflineLLM(), emb), BuildParams(**{params!r}), progress=progress)
    print("finished", flush=True)
    """
)


def _children(pid: int) -> list[int]:
    return child_pids(pid)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL and /proc")
def test_killed_build_with_worker_processes_leaves_none_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "killed"
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=str(ROOT), db=str(db), params=PARAMS))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        stage, done = (line.split() + ["0"])[:2]
        if stage == "extract" and int(done) >= 3:
            workers = _children(proc.pid)
            os.kill(proc.pid, signal.SIGKILL)
            break
        assert stage != "finished" and time.monotonic() < deadline
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and len(workers) == 2  # the build was extracting in two workers
    until = time.monotonic() + 20
    while any(_running(w) for w in workers) and time.monotonic() < until:
        time.sleep(0.1)
    assert not any(_running(w) for w in workers)  # stdin closed with the build: they ended too

    emb = HashingEmbedder(64)
    store = GraphStore.open(db, embedder_id=emb.id, dim=emb.dim)
    clean_store = GraphStore.open(tmp_path / "clean", embedder_id=emb.id, dim=emb.dim)
    try:
        before = store.counts()
        assert before["Extraction"] >= 2 and before["Document"] == 0
        resumed = build(corpus(), store, Reasoner(OfflineLLM(), emb), BuildParams(**PARAMS))
        clean = build(corpus(), clean_store, Reasoner(OfflineLLM(), emb), BuildParams(**PARAMS))
        assert resumed.counts == clean.counts and resumed.reused_extractions == before["Extraction"]
        triples = "MATCH (t:Triple) RETURN t.id, t.text ORDER BY t.id"
        assert store.query(triples) == clean_store.query(triples)
    finally:
        store.close()
        clean_store.close()
