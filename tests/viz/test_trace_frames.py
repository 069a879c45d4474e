"""kgviz.viz.trace: a trace becomes frames (cumulative subgraph, this step's roles, earlier steps
dimmed), plus the per-step extras the Trace page shows."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kgviz.methods.base import EdgeRef, NodeRef, TraceStep
from kgviz.viz.graph_html import ROLE_COLOURS
from kgviz.viz.trace import (
    EARLIER,
    EARLIER_COLOUR,
    LINKED,
    build_frames,
    channel_budgets,
    frame_html,
    llm_mode_label,
    node_labels,
    round_info,
)


def _trace() -> list[TraceStep]:
    """seed A (+ candidate B) -> expand to C -> score -> choose C, reject B -> context C, D."""
    return [
        TraceStep(0, "seed", "Start", nodes=[NodeRef("A", "Entity", "seed", "Alpha"),
                                             NodeRef("B", "Entity", "candidate", "Beta")]),
        TraceStep(1, "expand", "Neighbours", nodes=[NodeRef("C", "Triple", "candidate", "Alpha knows Gamma")],
                  edges=[EdgeRef("A", "G", "knows", "candidate")]),
        TraceStep(2, "score", "Rank", nodes=[NodeRef("C", "Triple", "candidate", "", 0.8),
                                             NodeRef("B", "Entity", "candidate", "", 0.3)],
                  scores={"C": 0.8, "B": 0.3}),
        TraceStep(3, "select", "Choose", nodes=[NodeRef("C", "Triple", "chosen", "Alpha knows Gamma"),
                                                NodeRef("B", "Entity", "rejected", "Beta")],
                  edges=[EdgeRef("A", "G", "knows", "chosen")]),
        TraceStep(4, "context", "Context", nodes=[NodeRef("C", "Triple", "context", "Alpha knows Gamma"),
                                                  NodeRef("G", "Entity", "context", "Gamma")]),
        TraceStep(5, "answer", "Answer"),
    ]


def _roles(frame) -> dict[str, str]:  # noqa: ANN001 - Frame
    return {n.id: str(n.role) for n in frame.nodes}


def test_one_frame_per_step_with_the_cumulative_subgraph() -> None:
    trace = _trace()
    frames = build_frames(trace)
    assert [f.index for f in frames] == list(range(len(trace)))
    for i, f in enumerate(frames):
        expected: set[str] = set()
        for s in trace[: i + 1]:
            expected |= {n.id for n in s.nodes} | {x for e in s.edges for x in (e.source, e.target)}
        assert {n.id for n in f.nodes} == expected
        assert f.total_nodes == len(expected)
        assert f.step is trace[i]
    assert [len(f.nodes) for f in frames] == [2, 4, 4, 4, 4, 4]  # G arrives with the edge at step 1


def test_current_step_has_its_roles_and_everything_earlier_is_dimmed() -> None:
    frames = build_frames(_trace())
    assert _roles(frames[0]) == {"A": "seed", "B": "candidate"}
    assert _roles(frames[1]) == {"A": EARLIER, "B": EARLIER, "C": "candidate", "G": EARLIER}
    assert frames[1].roles == {"C": "candidate"}  # G is only an edge end, not listed by the step
    assert [str(e.role) for e in frames[1].edges] == ["candidate"]
    assert _roles(frames[3]) == {"A": EARLIER, "B": "rejected", "C": "chosen", "G": EARLIER}
    assert [str(e.role) for e in frames[3].edges] == ["chosen"]
    assert all(r == EARLIER for r in _roles(frames[5]).values())  # the answer step touches nothing
    assert [str(e.role) for e in frames[5].edges] == [EARLIER]


def test_a_node_chosen_at_step_3_is_chosen_there_and_dimmed_later() -> None:
    frames = build_frames(_trace())
    at3 = {n.id: n for n in frames[3].nodes}
    at5 = {n.id: n for n in frames[5].nodes}
    assert at3["C"].role == "chosen"
    assert frames[4].roles["C"] == "context"
    assert at5["C"].role == EARLIER
    assert at3["C"].size is not None and at5["C"].size is not None and at3["C"].size > at5["C"].size
    # the tooltip keeps the history so a dimmed node still says what happened to it
    assert "step 4: chosen" in at5["C"].title and "step 5: context" in at5["C"].title


def test_labels_come_from_any_step_and_fall_back_to_the_id() -> None:
    trace = _trace()
    frames = build_frames(trace)
    labels = {n.id: n.label for n in frames[1].nodes}
    # G is first seen as an edge end at step 1; its label is only given at step 4
    assert labels == {"A": "Alpha", "B": "Beta", "C": "Alpha knows Gamma", "G": "Gamma"}
    assert node_labels(trace)["C"] == ("Alpha knows Gamma", "Triple")
    orphan = build_frames([TraceStep(0, "expand", "x", edges=[EdgeRef("p", "q", "r")])])
    assert {n.id: (n.label, n.kind) for n in orphan[0].nodes} == {"p": ("p", "Entity"), "q": ("q", "Entity")}


def test_duplicate_refs_in_one_step_keep_the_strongest_role() -> None:
    step = TraceStep(0, "select", "x", nodes=[NodeRef("A", "Entity", "candidate"), NodeRef("A", "Entity", "chosen"),
                                               NodeRef("A", "Entity", "rejected")])
    assert build_frames([step])[0].roles == {"A": "chosen"}


def test_cap_keeps_the_current_step_first() -> None:
    early = TraceStep(0, "seed", "many", nodes=[NodeRef(f"e{i}", "Entity", "candidate", f"E{i}") for i in range(10)])
    late = TraceStep(1, "select", "pick", nodes=[NodeRef("x", "Entity", "chosen", "X")])
    frames = build_frames([early, late], cap=4)
    last = frames[1]
    assert last.total_nodes == 11 and len(last.nodes) == 4
    assert "x" in {n.id for n in last.nodes}
    assert "showing 4" in last.caption
    # shown nodes stay in first-appearance order, so layouts change less between frames
    assert [n.id for n in last.nodes] == ["e0", "e1", "e2", "x"]


def test_frames_and_pages_are_deterministic() -> None:
    a, b = build_frames(_trace()), build_frames(_trace())
    assert a == b
    assert frame_html(a[3]) == frame_html(b[3])
    assert frame_html(a[3]) != frame_html(a[4])  # different highlighting -> different page


def test_frame_page_colours_roles_and_explains_them() -> None:
    page = frame_html(build_frames(_trace())[3], height=300)
    assert ROLE_COLOURS["chosen"] in page and ROLE_COLOURS["rejected"] in page and EARLIER_COLOUR in page
    legend = page.split('id="kgviz-legend">', 1)[1].split("</div>", 1)[0]
    for word in ("chosen", "rejected", "earlier steps", "diamond = Triple", "dot = Entity"):
        assert word in legend
    assert "seed" not in legend  # only roles drawn in this frame are explained


def test_hostile_labels_are_escaped_in_the_frame_page() -> None:
    bad = "<script>alert(1)</script>"
    frames = build_frames([TraceStep(0, "seed", "x", nodes=[NodeRef("n", "<b>T</b>", "seed", bad)])])
    page = frame_html(frames[0])
    assert bad not in page and "<b>T</b>" not in page


def test_channel_budgets_track_the_latest_use_per_channel() -> None:
    trace = [
        TraceStep(0, "seed", "s", data={"channel": "skeleton", "used": 100, "budget": 1600}),
        TraceStep(1, "select", "s", data={"channel": "skeleton", "used": 900, "budget": 1600}),
        TraceStep(2, "seed", "k", data={"channel": "keyword", "used": 3000, "budget": 2400}),
        TraceStep(3, "answer", "a", data={"channel": "keyword", "used": "n/a", "budget": 2400}),
    ]
    assert channel_budgets(trace, 0)[0].used == 100
    got = channel_budgets(trace, 3)
    assert [(b.channel, b.used, b.budget) for b in got] == [("skeleton", 900, 1600), ("keyword", 3000, 2400)]
    assert got[0].fraction == pytest.approx(900 / 1600) and got[1].fraction == 1.0  # over budget shows full
    assert channel_budgets([TraceStep(0, "seed", "x")], 0) == []


def test_round_info_reads_round_and_frontier() -> None:
    trace = [
        TraceStep(0, "seed", "seeds"),
        TraceStep(1, "expand", "r1", data={"round": 1, "active": ["x", "y"]}),
        TraceStep(2, "select", "r1 select", data={"round": 1}),
        TraceStep(3, "expand", "r1 frontier", data={"round": 1, "frontier": ["a", "b", "c"]}),
        TraceStep(4, "select", "r2 select", data={"round": 2}),
        TraceStep(5, "llm", "odd", data={"round": True}),
    ]
    got = [round_info(trace, i) for i in range(len(trace))]
    assert got[0] is None and got[5] is None
    assert [(g.round, g.frontier) for g in got[1:5] if g] == [(1, 2), (1, 2), (1, 3), (2, None)]


def test_llm_mode_label_names_the_heuristic() -> None:
    assert llm_mode_label("offline", "plan: capitalised spans") == "offline heuristic: plan: capitalised spans"
    assert llm_mode_label("offline") == "offline heuristic"
    assert llm_mode_label("anthropic:claude-haiku-4-5", "ignored") == "anthropic:claude-haiku-4-5"


def test_frames_of_a_real_kg_rag_run(tmp_path: Path) -> None:
    """kg-rag offline on the sample corpus: every select step's chosen fact is "chosen" in its own
    frame and dimmed in the next one, and the trace round-trips through JSON unchanged."""
    from kgviz.config import Settings
    from kgviz.index.params import BuildParams
    from kgviz.index.pipeline import build
    from kgviz.ingest import load_paths
    from kgviz.run import Run, run_method
    from kgviz.workspace import open_workspace

    corpus = Path(__file__).resolve().parents[2] / "sample_data" / "corpus"
    ws = open_workspace(Settings.from_env(), db_dir=tmp_path / "ws", llm_spec="offline", embedder_spec="hashing")
    from kgviz.viz.labels import fetch_links
    from kgviz.viz.trace import triple_ids

    try:
        build(load_paths([corpus]).documents, ws.store, ws.reasoner(), BuildParams(workers=2))
        run = run_method("kg-rag", "In what year was the Tidewell Line founded?", ws.method_context())
        links = fetch_links(ws.store, triple_ids(run.trace))
        hyper = ws.store.query("MATCH (t:Triple) WHERE t.subject_id STARTS WITH 'tri:' RETURN t.id AS id LIMIT 1")
        inner = fetch_links(ws.store, [hyper[0]["id"]]) if hyper else None
    finally:
        ws.store.close()
    assert run.ok, run.error
    # every fact of the trace is tied to two ends the store names; a hypernode's inner end is a Triple
    assert set(links.links) == set(triple_ids(run.trace)) and links.links
    assert all(s and o for s, o in links.links.values())
    assert all(label for label, _ in links.labels.values())
    if inner is not None:
        subject = inner.links[hyper[0]["id"]][0]
        assert inner.labels[subject][1] == "Triple"
    linked = build_frames(run.trace, triple_links=links.links, link_labels=links.labels)
    for f in linked:
        drawn = {n.id for n in f.nodes}
        joined = {frozenset((e.source, e.target)) for e in f.edges}
        for n in f.nodes:
            if n.kind == "Triple" and n.role != LINKED:
                assert all(frozenset((n.id, end)) in joined for end in links.links[n.id] if end in drawn)
    assert linked[-1].positions is not None and all(f.positions == linked[-1].positions for f in linked)
    frames = build_frames(run.trace)
    selects = [f for f in frames if f.step.kind == "select" and f.step.data.get("chosen")]
    assert selects
    for f in selects:
        for tid in f.step.data["chosen"]:
            assert {n.id: n.role for n in f.nodes}[tid] == "chosen"
            after = frames[f.index + 1]  # the evaluate step, which touches no node
            assert not after.roles and {n.id: n.role for n in after.nodes}[tid] == EARLIER
    replayed = build_frames(Run.from_dict(json.loads(json.dumps(run.to_dict()))).trace)
    def shape(fs: list) -> list:  # noqa: ANN001 - frames
        return [(f.roles, [n.id for n in f.nodes]) for f in fs]

    assert shape(replayed) == shape(frames)


# --- one layout for the whole run -------------------------------------------------------------------
def _xy(page: str) -> dict[str, tuple[float, float]]:
    """Node label -> (x, y) as written into a frame page's data."""
    data = json.loads(page.split("nodes = new vis.DataSet(", 1)[1].split(");", 1)[0])
    return {n["label"]: (n["x"], n["y"]) for n in data}


def test_every_frame_shares_one_layout_of_all_its_nodes() -> None:
    frames = build_frames(_trace())
    positions = frames[0].positions
    assert positions is not None
    assert all(f.positions == positions for f in frames)
    assert set(positions) == {n.id for f in frames for n in f.nodes}
    for x, y in positions.values():
        assert math.isfinite(x) and math.isfinite(y)
    # the same node is drawn at the same place on every page, physics off
    pages = [frame_html(f) for f in frames[1:5]]
    drawn = [_xy(p) for p in pages]
    for label in ("Alpha", "Beta", "Gamma", "Alpha knows Gamma"):
        assert len({d[label] for d in drawn}) == 1
    assert all('"physics": {"enabled": false}' in p and "kgvizView(network, container, [" in p for p in pages)
    assert frames[1].positions == build_frames(_trace())[1].positions  # deterministic


def test_early_frames_are_drawn_in_the_view_of_the_whole_run() -> None:
    frames = build_frames(_trace())
    box = [p.split("kgvizView(network, container, [", 1)[1].split("]", 1)[0] for p in map(frame_html, frames)]
    assert len(set(box)) == 1  # same zoom and pan for two nodes (step 1) as for four (step 5)


def test_layout_can_be_left_to_the_browser() -> None:
    frames = build_frames(_trace(), stable_layout=False)
    assert all(f.positions is None for f in frames)
    page = frame_html(frames[1])
    assert "stabilizationIterationsDone" in page and "kgvizView(network, container, [" not in page
    # or placed explicitly
    placed = {nid: (float(i * 50), 10.0) for i, nid in enumerate(["A", "B", "C", "G"])}
    assert _xy(frame_html(frames[1], positions=placed))["Gamma"] == (150.0, 10.0)


def test_nothing_to_lay_out_when_no_step_touches_the_graph() -> None:
    frames = build_frames([TraceStep(0, "llm", "plan"), TraceStep(1, "answer", "a")])
    assert [f.positions for f in frames] == [None, None] and not frames[0].nodes


# --- facts tied to their subject and object -----------------------------------------------------------
def _fact_trace() -> list[TraceStep]:
    return [
        TraceStep(0, "seed", "Seed", nodes=[NodeRef("e:a", "Entity", "seed", "Alpha")]),
        TraceStep(1, "expand", "Facts", nodes=[NodeRef("t:1", "Triple", "candidate", "Alpha knows Gamma"),
                                                NodeRef("t:2", "Triple", "candidate", "(Alpha knows Gamma) in 1900")]),
        TraceStep(2, "select", "Choose", nodes=[NodeRef("t:1", "Triple", "chosen", "Alpha knows Gamma"),
                                                NodeRef("t:2", "Triple", "rejected", "")]),
        TraceStep(3, "context", "Context", nodes=[NodeRef("e:g", "Entity", "context", "Gamma")]),
    ]


LINKS = {"t:1": ("e:a", "e:g"), "t:2": ("t:1", "e:1900"), "t:x": ("e:a", "e:z")}
LABELS = {"e:a": ("alpha (store)", "Entity"), "e:g": ("Gamma", "Entity"), "t:1": ("Alpha knows Gamma", "Triple"),
          "e:1900": ("1900", "Entity")}


def _links_of(frame) -> dict[tuple[str, str], str]:  # noqa: ANN001 - Frame
    return {(e.source, e.target): str(e.role) for e in frame.edges if e.label == ""}


def test_triple_links_draw_subject_and_object_edges_in_the_facts_colour() -> None:
    frames = build_frames(_fact_trace(), triple_links=LINKS, link_labels=LABELS)
    assert _links_of(frames[0]) == {}  # no fact shown yet (t:x is never in the trace)
    assert _links_of(frames[1]) == {("t:1", "e:a"): "candidate", ("t:1", "e:g"): "candidate",
                                    ("t:2", "t:1"): "candidate", ("t:2", "e:1900"): "candidate"}
    assert _links_of(frames[2]) == {("t:1", "e:a"): "chosen", ("t:1", "e:g"): "chosen",
                                    ("t:2", "t:1"): "rejected", ("t:2", "e:1900"): "rejected"}
    assert set(_links_of(frames[3]).values()) == {EARLIER}  # the facts are earlier now
    widths = {e.width for f in frames for e in f.edges if e.label == ""}
    assert widths == {1}  # thin, even for a chosen fact
    assert not frames[1].edge_roles  # links are drawn, not counted as edges the step touched


def test_link_ends_no_step_touched_become_small_pale_nodes() -> None:
    frames = build_frames(_fact_trace(), triple_links=LINKS, link_labels=LABELS)
    at1 = {n.id: n for n in frames[1].nodes}
    assert at1["e:g"].role == LINKED and at1["e:g"].label == "Gamma"  # named by the store
    assert at1["e:1900"].role == LINKED and at1["e:1900"].kind == "Entity"
    assert at1["e:g"].size is not None and at1["e:a"].size is not None and at1["e:g"].size < at1["e:a"].size
    assert "object of Alpha knows Gamma" in at1["e:g"].title
    assert at1["e:a"].label == "Alpha"  # the trace's own label wins over the store's
    assert frames[1].total_nodes == 5
    at3 = {n.id: n for n in frames[3].nodes}
    assert at3["e:g"].role == "context"  # touched now: an ordinary node
    legend = frame_html(frames[1]).split('id="kgviz-legend">', 1)[1].split("</div>", 1)[0]
    assert "end of a fact" in legend
    # a hypernode's inner fact is linked to, drawn as a Triple
    hyper = build_frames(_fact_trace()[:1] + [TraceStep(1, "expand", "x", nodes=[NodeRef("t:2", "Triple")])],
                         triple_links=LINKS, link_labels=LABELS)
    inner = {n.id: n for n in hyper[1].nodes}["t:1"]
    assert inner.kind == "Triple" and inner.role == LINKED and inner.label == "Alpha knows Gamma"


def test_a_pair_the_trace_already_joins_gets_no_second_edge() -> None:
    trace = [TraceStep(0, "expand", "x", nodes=[NodeRef("t:1", "Triple", "candidate", "f")],
                       edges=[EdgeRef("t:1", "e:a", "SUBJ", "candidate")])]
    frame = build_frames(trace, triple_links=LINKS)[0]
    assert [(e.source, e.target, e.label) for e in frame.edges] == [("t:1", "e:a", "SUBJ"), ("t:1", "e:g", "")]
    assert {n.id: n.label for n in frame.nodes}["e:g"] == "e:g"  # no label anywhere: the id


def test_linked_nodes_share_the_layout() -> None:
    frames = build_frames(_fact_trace(), triple_links=LINKS, link_labels=LABELS)
    positions = frames[0].positions
    assert positions is not None and {"e:g", "e:1900"} <= set(positions)
    assert all(f.positions == positions for f in frames)


def test_a_label_hanging_under_its_node_covers_no_other_node() -> None:
    # KG-Retriever's context step on the sample: twenty facts with long labels around one entity; the
    # layout kept centred footprints apart, so a label drawn under its node lay over the node below
    hub = NodeRef("ent:t", "Entity", "seed", "Tidewell Line")
    facts = [NodeRef(f"tri:{i}", "Triple", "chosen", f"Tidewell Line in same sentence as Place {i:02d}", 1.0)
             for i in range(20)]
    trace = [TraceStep(0, "seed", "Seed", nodes=[hub]),
             TraceStep(1, "context", "Context", nodes=facts,
                       edges=[EdgeRef("ent:t", f.id, "in same sentence as", "chosen") for f in facts])]
    last = build_frames(trace)[-1]
    pos = last.positions
    radius = {v.id: 1.25 * (v.size or 12.0) for v in last.nodes}  # the player's biggest (best score)
    covered = []
    for v in last.nodes:
        x, y = pos[v.id]
        width = 7.5 * len(v.label)  # one 14 px line of DejaVu Sans, centred under the node
        label = (x - width / 2, y + radius[v.id], x + width / 2, y + radius[v.id] + 16)
        for u in last.nodes:
            ux, uy = pos[u.id]
            r = radius[u.id]
            if u.id != v.id and label[0] < ux + r and ux - r < label[2] and label[1] < uy + r and uy - r < label[3]:
                covered.append((v.label, u.label))
    assert covered == []
