"""The build checks every extracted fact against its chunk and reports what it left out (issue 23)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.support.index_fakes import ScriptedLLM, corpus, failing_for, offline_reply
from kgviz.graph.store import GraphStore
from kgviz.index.pipeline import BuildParams, build
from kgviz.prompts.extraction import EXTRACT_TRIPLES_EXAMPLES
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner

EMB = HashingEmbedder(64)
PARAMS = BuildParams(chunk_tokens=24, chunk_overlap=0, workers=2, batch_size=2, similar_docs_k=2, ket_enabled=False)
EXAMPLES_REPLY = "\n".join(ln for ln in EXTRACT_TRIPLES_EXAMPLES.splitlines() if ln.startswith("("))
N_EXAMPLES = 26  # triples in the prompt's examples


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GraphStore]:
    s = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    yield s
    s.close()


def test_a_model_that_returns_the_prompts_examples_stores_nothing(store: GraphStore) -> None:
    report = build(corpus(), store, Reasoner(ScriptedLLM(lambda text: EXAMPLES_REPLY), EMB), PARAMS)
    chunks = report.new_chunks
    assert report.extracted_chunks == chunks and report.failed_chunks == 0 and not report.failures
    assert report.facts_accepted == 0 and report.counts["Triple"] == 0 and report.new_entities == 0
    assert report.facts_ungrounded == report.facts_prompt_examples == N_EXAMPLES * chunks
    assert report.ungrounded_chunks == chunks and report.not_following_prompt
    assert [r["ungrounded"] for r in report.chunk_facts] == [N_EXAMPLES] * chunks
    assert report.rejected_facts[0][1] == "(Ana Pell; was born in; Dorrow)"
    assert "prompt's examples" in report.rejected_facts[0][2]
    rows = store.query("MATCH (x:Extraction) RETURN x.status AS s, x.n_triples AS n, x.error AS e")
    assert {(r["s"], r["n"]) for r in rows} == {("partial", 0)} and all("copy the prompt's examples" in r["e"] for r in rows)
    # a re-run reads the stored replies again (no model call) and says the same
    llm = ScriptedLLM(lambda text: EXAMPLES_REPLY)
    again = build(corpus(), store, Reasoner(llm, EMB), PARAMS)
    assert llm.calls == 0 and again.new_documents == 0


def test_invented_facts_are_left_out_and_listed_the_rest_is_kept(store: GraphStore) -> None:
    def script(text: str) -> str:
        extra = "\n(Tarroin Bridge; crosses; River Vell)" if "River Vell" in text else ""
        return offline_reply(text) + extra

    report = build(corpus(), store, Reasoner(ScriptedLLM(script), EMB), PARAMS)
    clean = build(corpus(), GraphStore.open(store.path.parent / "clean", embedder_id=EMB.id, dim=EMB.dim),
                  Reasoner(ScriptedLLM(), EMB), PARAMS)
    assert report.facts_ungrounded == 1 and report.facts_prompt_examples == 0 and not report.not_following_prompt
    assert [list(f)[1:] for f in report.rejected_facts] == [
        ["(Tarroin Bridge; crosses; River Vell)", "'Tarroin Bridge' is not in the text"]]
    assert report.facts_accepted == clean.facts_accepted and report.counts == clean.counts
    assert clean.facts_ungrounded == 0


def test_extracted_and_failed_chunks_are_counted_apart(store: GraphStore) -> None:
    report = build(corpus(), store, Reasoner(ScriptedLLM(failing_for("University of Aldport")), EMB), PARAMS)
    assert report.failed_chunks == len(report.failures) == 2
    assert report.extracted_chunks + report.failed_chunks == report.new_chunks
    assert len(report.chunk_facts) == report.extracted_chunks
    assert not report.not_following_prompt


def test_an_offline_build_keeps_every_fact_and_is_never_flagged(store: GraphStore) -> None:
    report = build(corpus(), store, Reasoner(OfflineLLM(), EMB), PARAMS)
    assert report.facts_ungrounded == 0 and report.facts_accepted > 0 and not report.not_following_prompt
    assert not any("offline extractor wrote" in w for w in report.warnings)


def test_offline_facts_are_checked_and_kept_llm_facts_are_left_out() -> None:
    """The policy of kgviz.index.extract.checked: the offline extractor's facts are kept whatever
    the check says (none fails on the sample and the shared corpora: the offline graph and the
    golden traces rest on them) and a miss is named; a model's facts are left out."""
    from kgviz.facts.parse import parse_triples
    from kgviz.index.extract import checked
    from kgviz.types import Chunk

    chunk = Chunk(id="doc:x#c0", doc_id="doc:x", ord=0, text="The Orrin Bridge crosses the River Vell.", n_tokens=8)
    out = parse_triples("(Orrin Bridge; crosses; River Vell)\n(Tarroin Bridge; crosses; River Vell)")
    unfound: list[str] = []
    assert checked(out, chunk, "", offline=True, unfound=unfound) is out and len(out.triples) == 2
    assert unfound == ["doc:x#c0: (Tarroin Bridge; crosses; River Vell): 'Tarroin Bridge' is not in the text"]
    llm = checked(out, chunk, "", offline=False)
    assert [t.render() for t in llm.triples] == ["(Orrin Bridge; crosses; River Vell)"] and len(llm.rejected) == 1
