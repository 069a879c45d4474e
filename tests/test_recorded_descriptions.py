"""Replay the recorded KET skeleton descriptions (Alg. 1 line 3, issue 27.1): qwen2.5-coder-0.5b's
real replies to DESCRIBE_SKELETON for the entities and relationships of every sample document, on
the graph the recorded extraction builds (the recorded sample's own build, SAMPLE_BUILD). No model, server or network;
a request the recording lacks raises RecordingMissError."""
from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any

import pytest

from kgviz.evaluate.qa import load_questions
from kgviz.index.ground import Source, check_description
from kgviz.index.params import BuildReport
from kgviz.methods.base import MethodContext
from kgviz.methods.ket_channels import OURS_ENTITY_TEXT
from kgviz.providers.offline import OfflineLLM
from kgviz.providers.recorded import RecordedLLM, load_recording
from kgviz.reasoning import Reasoner
from kgviz.replay import DESCRIBE_FILE, SAMPLE_QUESTIONS, SAMPLE_RECORDING, build_sample, open_session
from kgviz.run import run_method

FIGURES: dict[str, Any] = json.loads((SAMPLE_RECORDING / DESCRIBE_FILE).read_text(encoding="utf-8"))
PARAMS = {"skeleton_beta": 0.0, "entity_match": "embedding", "context_limit": 1200}  # benchmarks/ket_descriptions.py
S03 = next(q for q in load_questions(SAMPLE_QUESTIONS) if q.id == "s03")


@dataclass
class Replayed:
    llm: RecordedLLM
    report: BuildReport
    rows: list[dict[str, Any]]
    run: Any


def _no_network(*args: object, **kwargs: object) -> None:
    raise AssertionError(f"a replay tried to open a network connection: {args!r}")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Replayed:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", _no_network)
        llm = RecordedLLM(SAMPLE_RECORDING, load_recording(SAMPLE_RECORDING))
        session = open_session(tmp_path_factory.mktemp("described") / "db", llm)
        try:
            report = build_sample(session)
            chunks = {r["id"]: (r["text"], r["title"]) for r in session.store.query(
                "MATCH (doc:Document)-[:HAS_CHUNK]->(c:Chunk) RETURN c.id AS id, c.text AS text, doc.title AS title")}
            # an item described from several chunks joins their descriptions (each checked against
            # its own chunk): the stored text is checked against all of them
            rows = [{**r, "chunk": "\n".join(chunks[c][0] for c in r["chunk_ids"].split("|")),
                     "title": " / ".join(dict.fromkeys(chunks[c][1] for c in r["chunk_ids"].split("|")))}
                    for r in session.store.query("MATCH (d:Description) RETURN d.target AS target, d.kind AS kind, "
                                                 "d.text AS text, d.chunk_ids AS chunk_ids")]
            ctx = MethodContext(session.store, Reasoner(OfflineLLM(), session.reasoner.embedder))
            run = run_method("skeleton-rag", S03.question, ctx, PARAMS)
        finally:
            session.close()
    return Replayed(llm, report, rows, run)


def test_the_replay_asks_only_what_was_recorded(replayed: Replayed) -> None:
    assert replayed.llm.misses == 0 and replayed.llm.hits > 0
    assert replayed.report.mode == f"recorded:{replayed.llm.model}"


def test_the_figures_are_the_recorded_ones(replayed: Replayed) -> None:
    now, then = replayed.report.ket["descriptions"], FIGURES["descriptions"]
    for key in ("chunks", "items", "failed", "accepted", "rejected", "entities", "relationships"):
        assert now[key] == then[key], key
    assert now["items"] == now["accepted"] + sum(now["rejected"].values()) + now["failed"]
    # the real model's replies are not all usable: the check left some out, and what it kept was stored
    assert sum(now["rejected"].values()) > 0 and now["entities"] > 0 and now["relationships"] > 0
    assert replayed.report.counts["Description"] == now["entities"] + now["relationships"] == len(replayed.rows)


def test_every_stored_description_passes_the_grounding_check(replayed: Replayed) -> None:
    for r in replayed.rows:
        for part in [r["text"]]:
            assert check_description(part, Source(r["chunk"], r["title"])) is None, r["text"]


def test_the_skeleton_channel_states_the_recorded_descriptions(replayed: Replayed) -> None:
    run = replayed.run
    assert not run.error
    texts = {r["target"]: r["text"] for r in replayed.rows}
    seed = next(s for s in run.trace if s.title == "Skeleton channel: seed entities")
    assert seed.data["descriptions"] == "llm" and OURS_ENTITY_TEXT not in seed.ours
    described = [i for i in run.context.items if i.id in texts]
    assert described and all(i.text.endswith(texts[i.id]) for i in described)
    # an entity the model did not describe (or whose description the check left out) keeps its
    # source sentences, and the seed step says how many of the chosen ones that is
    assert bool(seed.data["not_described"]) == ("no LLM-written description" in seed.ours)
