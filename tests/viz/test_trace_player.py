"""The browser-side trace player's data and page: one frame and one panel per step, evaluate
steps keep the path, KG-Retriever weights and hops, KET-RAG channels, hostile text inert."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from kgviz.methods.base import EdgeRef, NodeRef, TraceStep
from kgviz.viz import trace as vt
from kgviz.viz import trace_player as tp
from kgviz.viz.graph_html import EXTERNAL_REF
from kgviz.viz.step_panel import MARKS, candidate_rows, step_panel

HOSTILE = '</script><script>alert(1)</script><img src=x onerror=alert(2)>&amp;'


def _step(i: int, kind: str, title: str, **kw: Any) -> TraceStep:
    return TraceStep(i, kind, title, **kw)  # type: ignore[arg-type]


def _retriever_trace() -> list[TraceStep]:
    return [
        _step(0, "seed", "Top-2 documents", nodes=[NodeRef("doc:a", "Document", "chosen", "a", 0.9),
                                                   NodeRef("doc:b", "Document", "chosen", "b", 0.5),
                                                   NodeRef("doc:c", "Document", "rejected", "c", 0.1)],
              scores={"doc:a": 0.9, "doc:b": 0.5, "doc:c": 0.1}),
        _step(1, "expand", "Document layer", nodes=[NodeRef("doc:a", "Document", "seed", "a"),
                                                    NodeRef("doc:d", "Document", "chosen", "d")],
              edges=[EdgeRef("doc:a", "doc:d", "SIMILAR_DOC", "chosen", 0.5)],
              data={"hop": {"doc:a": 0, "doc:d": 1}, "strategy": "attentive"}),
        _step(2, "llm", "Enough to answer?", data={"decision": "stop"}),
        _step(3, "select", "Facts", nodes=[NodeRef("tri:1", "Triple", "chosen", "a likes d", 0.7),
                                           NodeRef("tri:2", "Triple", "rejected", "b hates d", 0.2)],
              edges=[EdgeRef("doc:a", "doc:a", "HAS_CHUNK")]),
    ]


def _data(trace: list[TraceStep], labels: dict[str, str] | None = None) -> dict[str, Any]:
    frames = vt.build_frames(trace)
    names = {k: v for k, (v, _t) in vt.node_labels(trace).items()}
    names.update(labels or {})
    return tp.player_data(frames, trace, names)


def test_one_panel_per_step_and_evaluate_steps_keep_the_path() -> None:
    trace = _retriever_trace()
    data = _data(trace)
    assert [s["panel"]["head"] for s in data["steps"]] == [
        "Step 1 of 4 · seed", "Step 2 of 4 · expand", "Step 3 of 4 · llm", "Step 4 of 4 · select"]
    v = [s["v"] for s in data["steps"]]
    assert v[2] == v[1] and v[3] != v[2]  # the LLM step shows the previous frame, highlighted
    assert data["steps"][2]["panel"]["note"] == tp.NO_CHANGE_NOTE
    step2 = data["visuals"][v[1]]
    roles = {data["nodes"][n[0]]["label"].split(" ·")[0]: n[1] for n in step2["nodes"]}
    assert roles["a"] == "seed" and roles["d"] == "chosen" and roles["b"] == "earlier"
    # every drawn node has a fixed position (one layout for the whole run)
    assert all(isinstance(n["x"], float) and isinstance(n["y"], float) for n in data["nodes"])


def test_kg_retriever_weights_and_hops_are_drawn() -> None:
    data = _data(_retriever_trace())
    step2 = data["visuals"][data["steps"][1]["v"]]
    (edge,) = [e for e in step2["edges"]]
    assert edge[3] == "w 0.50" and edge[2] == pytest.approx(3.5)  # width 1 + 5·w
    badges = {data["nodes"][n[0]]["label"]: n[3] for n in step2["nodes"]}
    assert badges["a"] == "hop 0" and badges["d"] == "hop 1"
    # the hop stays marked in later frames; self-loops (chunk -> own document) are not drawn
    last = data["visuals"][data["steps"][3]["v"]]
    assert {data["nodes"][n[0]]["label"]: n[3] for n in last["nodes"]}["d"] == "hop 1"
    assert all(data["edges"][e[0]]["from"] != data["edges"][e[0]]["to"] for e in last["edges"])
    facts = dict(map(tuple, data["steps"][1]["panel"]["facts"]))
    assert facts["document-layer strategy"] == "attentive"


def test_select_panel_lists_candidates_best_first_with_marks() -> None:
    trace = [_step(0, "select", "Pick", nodes=[NodeRef("tri:b", "Triple", "rejected", "B", 0.4),
                                               NodeRef("tri:a", "Triple", "rejected", "A", 0.4),
                                               NodeRef("tri:c", "Triple", "chosen", "C", 0.9),
                                               NodeRef("ent:x", "Entity", "chosen", "X")],
                   data={"w": {"tri:c": 0.5}})]
    columns, rows = candidate_rows(trace[0], {"tri:a": "A", "tri:b": "B", "tri:c": "C", "ent:x": "X"})
    assert columns == ["", "node", "score", "weight w"]
    # score desc, ties by id, unscored last; the step lists facts and an entity, so each row names its kind
    assert [r[1] for r in rows] == ["C (fact)", "A (fact)", "B (fact)", "X (entity)"]
    assert rows[0][0] == MARKS["chosen"] and rows[1][0] == MARKS["rejected"] and rows[0][3] == "0.500"
    panel = step_panel(trace, 0, {})
    assert panel["why"] == "4 node(s): 2 chosen, 2 rejected"
    # every role is counted, so the parts add up; a long list cell is cut to a few entries
    links = {"tri:c": [f"link {k}" for k in range(7)]}
    more = [_step(0, "context", "Units", nodes=[NodeRef("tri:c", "Triple", "chosen", "C", 0.9),
                                                NodeRef("tri:d", "Triple", "candidate", "D"),
                                                NodeRef("tri:e", "Triple", "seed", "E")], data={"links": links})]
    panel = step_panel(more, 0, {"tri:c": "C"})
    assert panel["why"] == "3 node(s): 1 chosen, 1 candidate, 1 seed"
    assert panel["columns"][-1] == "linked to" and panel["rows"][0][1] == "C"  # one kind: no suffix
    assert panel["rows"][0][-1] == "link 0, link 1, link 2, +4 more"


def test_node_size_follows_the_score_within_a_step() -> None:
    trace = [_step(0, "score", "Rank", nodes=[NodeRef("ent:a", "Entity", "candidate", "A", 0.9),
                                              NodeRef("ent:b", "Entity", "candidate", "B", 0.1)])]
    data = _data(trace)
    size = {data["nodes"][n[0]]["label"]: n[2] for n in data["visuals"][0]["nodes"]}
    assert size["A"] > size["B"]


def test_ket_channels_marked_and_budgets_in_the_panel() -> None:
    trace = [
        _step(0, "seed", "Skeleton seeds", nodes=[NodeRef("ent:a", "Entity", "seed", "A", 0.5)],
              data={"channel": "skeleton", "used": 400, "budget": 1600}),
        _step(1, "seed", "Keyword seeds", nodes=[NodeRef("kw:x", "Keyword", "seed", "x", 0.4),
                                                 NodeRef("ent:a", "Entity", "chosen", "A")],
              data={"channel": "keyword", "used": 3000, "budget": 4800, "budget_of": "pool"}),
        _step(2, "context", "Keyword units", nodes=[NodeRef("sub:1", "SubChunk", "chosen", "u")],
              data={"channel": "keyword", "used": 2070, "budget": 2400}),
    ]
    data = _data(trace)
    first = {data["nodes"][n[0]]["label"]: n[3] for n in data["visuals"][0]["nodes"]}
    second = {data["nodes"][n[0]]["label"]: n[3] for n in data["visuals"][1]["nodes"]}
    # a keyword node needs no mark: it only ever serves the keyword channel
    assert first == {"A": "skeleton"} and second == {"A": "both channels", "x": ""}
    # issue 22: the pool (2·(1−θ)·λ) and the channel's share of the context ((1−θ)·λ) are two bars
    # that say what they are a share of, and the shares add up to the answer step's λ
    bars = data["steps"][1]["panel"]["bars"]
    assert [b["label"] for b in bars] == [
        "skeleton channel, in the context: 400 of 1,600 tokens (θ·λ)",
        "keyword channel, candidate pool: 3,000 of 4,800 tokens gathered to be ranked (2·(1−θ)·λ, twice the "
        "channel's share of the context)"]
    assert [b["fraction"] for b in bars] == [0.25, 0.625]
    assert data["steps"][1]["panel"]["budget_total"] == ""  # one share known so far
    last = data["steps"][2]["panel"]
    assert last["bars"][2]["label"] == "keyword channel, in the context: 2,070 of 2,400 tokens ((1−θ)·λ)"
    assert last["budget_total"] == "context so far: 400 + 2,070 = 2,470 of 4,000 tokens (λ = θ·λ + (1−θ)·λ)"


def test_the_deciding_score_rank_parts_and_reason_in_the_panel_and_on_the_node() -> None:
    step = _step(0, "select", "Hop 2", data={"score_name": "the offline chooser's score",
                                             "picked": {"ranks": [3], "of": 3, "by": "model",
                                                        "ranking": "numbered by similarity", "words": "CHOICE: 3"}},
                 nodes=[NodeRef("tri:a", "Triple", "rejected", "A", 0.31, {"similarity": 0.31}, 1,
                                "the chooser picked #3 of 3 (numbered by similarity): the model decided"),
                        NodeRef("tri:b", "Triple", "rejected", "B", 0.13, {"similarity": 0.13}, 2, ""),
                        NodeRef("tri:c", "Triple", "chosen", "C", 0.12, {"similarity": 0.12, "bonus": 0.0}, 3)])
    columns, rows = candidate_rows(step, {"tri:a": "A", "tri:b": "B", "tri:c": "C"})
    assert columns == ["", "node", "score", "#", "parts", "reason"]
    assert [r[1] for r in rows] == ["A", "B", "C"]  # the order the choice was made in
    assert rows[2][4] == "similarity 0.120"  # zero terms are left out
    assert rows[0][5].startswith("the chooser picked #3 of 3") and rows[2][5] == ""
    facts = dict(map(tuple, step_panel([step], 0, {})["facts"]))
    assert facts["score"] == "the offline chooser's score"
    assert facts["choice"] == "the model picked #3 of 3 (numbered by similarity); a node it passed over says so"
    assert facts["the model's words"] == "CHOICE: 3"
    # the player: a node that scores above a chosen one and was left out carries its reason on its
    # label; one below the chosen one only in its tooltip line
    notes = tp.node_notes(step)
    assert notes["tri:a"][0] == "the chooser picked #3 of 3"
    assert tp.reason_mark("over budget: 80 tokens, 50 of 100 left") == "over budget"
    assert notes["tri:b"][0] == "" and notes["tri:b"][1] == "this step: rejected, score 0.130, #2"
    assert notes["tri:a"][1].endswith("— the chooser picked #3 of 3 (numbered by similarity): the model decided")
    data = _data([step])
    drawn = {data["nodes"][n[0]]["label"]: n[4:] for n in data["visuals"][0]["nodes"]}
    assert drawn["A"] == list(notes["tri:a"]) and drawn["C"] == ["", "this step: chosen, score 0.120, #3"]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)


def test_hostile_text_stays_inert_and_the_page_is_offline() -> None:
    trace = [_step(0, "select", HOSTILE, detail=HOSTILE,
                   nodes=[NodeRef("ent:" + HOSTILE, "Entity", "chosen", HOSTILE, 0.5)],
                   data={"note": HOSTILE})]
    page = tp.player_html(_data(trace))
    assert not EXTERNAL_REF.search(page)
    body = page.split('id="kp-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in body and ">" not in body and "&" not in body.replace("\\u0026", "")
    parser = _Tags()
    parser.feed(page)
    assert "img" not in parser.tags and parser.tags.count("script") == 3  # vis, data, player
    assert not [a for a, _v in parser.attrs if a.startswith("on")]
    data = json.loads(body)
    assert data["steps"][0]["panel"]["title"] == HOSTILE  # the text itself survives, as text
    js = page.rsplit("<script>", 1)[1]
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js


def test_same_inputs_same_page() -> None:
    assert tp.player_html(_data(_retriever_trace())) == tp.player_html(_data(_retriever_trace()))


def test_frames_must_match_the_trace() -> None:
    from kgviz.errors import KgvizError

    trace = _retriever_trace()
    with pytest.raises(KgvizError):
        tp.player_data(vt.build_frames(trace)[:2], trace, {})


def test_the_step_script_reads_its_data_by_id() -> None:
    page = tp.player_html(_data(_retriever_trace()))
    assert re.search(r'getElementById\("kp-data"\)\.textContent', page)
    assert "window.kgvizPlayer" in page and "getScale" in page


def test_a_step_of_ours_carries_its_mark_and_reason_into_the_panel_as_text() -> None:
    trace = _retriever_trace()
    trace[1].ours = "the top-2 documents weigh w = 1 " + HOSTILE
    data = _data(trace)
    panels = [s["panel"] for s in data["steps"]]
    assert panels[1]["ours"] == "ours: the top-2 documents weigh w = 1 " + HOSTILE
    assert [p["ours"] for i, p in enumerate(panels) if i != 1] == ["", "", ""]  # a paper step shows no mark
    js = tp.player_html(data).rsplit("<script>", 1)[1]
    assert 'p.ours' in js and '"kp-ours"' in js  # drawn under the title, with textContent (el)


def test_kg_infused_expand_panel_says_which_edges_were_followed() -> None:
    step = _step(0, "expand", "Round 1: one-hop triples", data={"round": 1, "direction": "both"})
    facts = dict(map(tuple, step_panel([step], 0, {})["facts"]))
    assert facts["edges followed"] == "outgoing and incoming (to the head too)"
