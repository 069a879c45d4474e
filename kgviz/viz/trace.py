"""A run's trace as frames for the Trace page (pure: no streamlit).

Frame ``i`` is the subgraph every step up to ``i`` touched. The nodes and edges step ``i`` itself
touched carry their role in that step (seed, candidate, chosen, rejected, context); everything an
earlier step touched is drawn in one dim colour ("earlier"), whatever its role was then, so the
eye goes to what this step did. A node's tooltip keeps its history ("step 3: chosen").

Edges of a step often join nodes the step does not list (kg-rag draws a fact as an edge between
its two entities but lists only the Triple node). Such ends are added as nodes too, so the edge
is drawn; their label comes from any step that names them, else their id.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, cast

from kgviz.methods.base import EdgeRef, Role, TraceStep
from kgviz.viz.graph_html import (
    KIND_STYLE, ROLE_COLOURS, VizEdge, VizNode, cap_graph, graph_html, iframe_height, legend_html,
)

EARLIER = "earlier"  # pseudo-role of elements an earlier step touched
EARLIER_COLOUR = "#dcdcdc"
FRAME_COLOURS: dict[str, str] = {**ROLE_COLOURS, EARLIER: EARLIER_COLOUR}
DEFAULT_CAP = 150  # nodes per frame; the current step's nodes are kept first
# when one step lists an element twice with different roles, the strongest statement wins
_ROLE_RANK: dict[str, int] = {"chosen": 5, "seed": 4, "context": 3, "rejected": 2, "candidate": 1}
_SHAPES = {"dot": "dot", "diamond": "diamond", "square": "square", "triangle": "triangle",
           "hexagon": "hexagon", "triangleDown": "down triangle"}


@dataclass(frozen=True)
class Frame:
    index: int
    step: TraceStep
    nodes: list[VizNode]  # capped, in first-appearance order (steadier layouts between frames)
    edges: list[VizEdge]
    roles: dict[str, str]  # node id -> role in this step (only nodes this step touched)
    edge_roles: dict[tuple[str, str, str], str]  # (source, target, rel) -> role in this step
    total_nodes: int  # cumulative, before the cap

    @property
    def caption(self) -> str:
        shown = len(self.nodes)
        base = f"step {self.index + 1}: {len(self.roles)} node(s) and {len(self.edge_roles)} edge(s) touched"
        base += f"; graph so far: {self.total_nodes} node(s)"
        return base + (f", showing {shown}" if shown < self.total_nodes else "")


@dataclass
class _Seen:
    kind: str
    first: int  # order of first appearance
    label: str = ""
    history: list[str] = field(default_factory=list)


def _strongest(current: str | None, new: str) -> str:
    if current is None or _ROLE_RANK.get(new, 0) > _ROLE_RANK.get(current, 0):
        return new
    return current


def node_labels(trace: Sequence[TraceStep]) -> dict[str, tuple[str, str]]:
    """Node id -> (label, table) from the first step that names it with a non-empty label."""
    out: dict[str, tuple[str, str]] = {}
    for s in trace:
        for n in s.nodes:
            if n.id not in out or (not out[n.id][0] and n.label):
                out[n.id] = (n.label, n.table)
    return out


def _edge_key(e: EdgeRef) -> tuple[str, str, str]:
    return (e.source, e.target, e.rel)


def _step_roles(step: TraceStep) -> tuple[dict[str, str], dict[tuple[str, str, str], str]]:
    nodes: dict[str, str] = {}
    for n in step.nodes:
        nodes[n.id] = _strongest(nodes.get(n.id), n.role)
    edges: dict[tuple[str, str, str], str] = {}
    for e in step.edges:
        if e.source and e.target:
            edges[_edge_key(e)] = _strongest(edges.get(_edge_key(e)), e.role)
    return nodes, edges


def build_frames(trace: Sequence[TraceStep], *, cap: int = DEFAULT_CAP) -> list[Frame]:
    """One frame per step, in trace order. Deterministic: the same trace gives equal frames."""
    names = node_labels(trace)
    seen: dict[str, _Seen] = {}
    seen_edges: dict[tuple[str, str, str], int] = {}  # key -> order of first appearance
    last_touch: dict[str, int] = {}
    frames: list[Frame] = []
    for i, step in enumerate(trace):
        roles, edge_roles = _step_roles(step)
        scores = {n.id: n.score for n in step.nodes if n.score is not None}
        ends = [x for key in edge_roles for x in key[:2]]
        for nid in list(roles) + ends:
            if nid not in seen:
                label, table = names.get(nid, ("", ""))
                seen[nid] = _Seen(table or "Entity", len(seen), label or nid)
            last_touch[nid] = i
        for nid, role in roles.items():
            seen[nid].history.append(f"step {i + 1}: {role}")
        for key in edge_roles:
            seen_edges.setdefault(key, len(seen_edges))
        # cap priority: this step's nodes, then edge ends, then the most recently touched
        priority = sorted(seen, key=lambda n: (n not in roles, -last_touch[n], seen[n].first))
        vnodes = [_viz_node(nid, seen[nid], roles.get(nid), scores.get(nid)) for nid in priority]
        vedges = [_viz_edge(key, edge_roles.get(key)) for key in sorted(seen_edges, key=seen_edges.__getitem__)]
        capped = cap_graph(vnodes, vedges, cap)
        ordered = sorted(capped.nodes, key=lambda v: seen[v.id].first)
        frames.append(Frame(i, step, ordered, capped.edges, roles, edge_roles, capped.total_nodes))
    return frames


def _viz_node(nid: str, info: _Seen, role: str | None, score: float | None) -> VizNode:
    tip = [info.label, f"{info.kind} {nid}"]
    if score is not None:
        tip.append(f"score this step: {score:.4g}")
    tip += info.history[-6:]  # recent history only: a hub node can be touched by every step
    base = 18.0 if info.kind == "Entity" else 12.0
    return VizNode(nid, info.label, info.kind, "\n".join(tip),
                   cast(Role, role or EARLIER), size=base * 1.5 if role else base)


def _viz_edge(key: tuple[str, str, str], role: str | None) -> VizEdge:
    source, target, rel = key
    return VizEdge(source, target, rel, rel, cast(Role, role or EARLIER))


def frame_legend(frame: Frame) -> str:
    """Legend HTML: the roles drawn in this frame (plus "earlier"), then which shape is which table."""
    used = set(frame.roles.values()) | set(frame.edge_roles.values())
    if any(v.role == EARLIER for v in frame.nodes) or any(e.role == EARLIER for e in frame.edges):
        used.add(EARLIER)
    names = {r: ("earlier steps" if r == EARLIER else r) for r in FRAME_COLOURS if r in used}
    legend = legend_html([], list(names.values()), {names[r]: FRAME_COLOURS[r] for r in names})
    kinds = sorted({v.kind for v in frame.nodes})
    shapes = ", ".join(f"{_SHAPES.get(KIND_STYLE.get(k, ('', 'dot'))[1], 'dot')} = {k}" for k in kinds)
    if shapes:
        legend = legend.replace("</div>", f"<span>shapes: {html.escape(shapes)}</span></div>", 1)
    return legend


def frame_html(frame: Frame, *, height: int = 520) -> str:
    """The frame as one offline pyvis page (kgviz.viz.graph_html) with the trace legend on top."""
    page = graph_html(frame.nodes, frame.edges, height=height, role_colours=FRAME_COLOURS, legend=False)
    return page.replace("<body>", "<body>\n" + frame_legend(frame), 1)


def frame_iframe_height(height: int = 520) -> int:
    return iframe_height(height, legend=True)


# --- per-step extras shown beside the graph ------------------------------------------------------
@dataclass(frozen=True)
class Budget:
    channel: str
    used: int
    budget: int

    @property
    def fraction(self) -> float:
        return 0.0 if self.budget <= 0 else max(0.0, min(1.0, self.used / self.budget))


def channel_budgets(trace: Sequence[TraceStep], index: int) -> list[Budget]:
    """KET-RAG: each channel's latest token use/budget at or before step ``index`` (channel order
    of first appearance). Steps without ``data["channel"]`` are ignored."""
    latest: dict[str, Budget] = {}
    for s in trace[: index + 1]:
        d = s.data or {}
        ch, used, budget = d.get("channel"), d.get("used"), d.get("budget")
        if isinstance(ch, str) and _is_number(used) and _is_number(budget):
            latest[ch] = Budget(ch, int(used), int(budget))
    return list(latest.values())


@dataclass(frozen=True)
class RoundInfo:
    round: int
    frontier: int | None  # entities at the frontier (or active this round); None when not recorded


def round_info(trace: Sequence[TraceStep], index: int) -> RoundInfo | None:
    """KG-Infused: the activation round of step ``index`` (``data["round"]``) and the frontier
    size: the step's own ``frontier`` (or ``active``) list, else the latest earlier step of the
    same round that recorded one (a selection step only says which round it belongs to)."""
    r = (trace[index].data or {}).get("round")
    if not _is_number(r):
        return None
    for s in reversed(trace[: index + 1]):
        d = s.data or {}
        if d.get("round") != r:
            continue
        for key in ("frontier", "active"):
            if isinstance(d.get(key), (list, tuple, set, dict)):
                return RoundInfo(int(r), len(d[key]))
    return RoundInfo(int(r), None)


def score_rows(step: TraceStep, labels: Mapping[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """The step's scores as table rows, best first, with each id's label and role in the step."""
    roles, _ = _step_roles(step)
    rows = [{"label": labels.get(k, ("", ""))[0], "score": float(v), "role": roles.get(k, ""), "id": k}
            for k, v in step.scores.items() if _is_number(v)]
    return sorted(rows, key=lambda r: (-r["score"], r["id"]))


def llm_mode_label(mode: str, heuristic: str = "") -> str:
    """How the step's reasoning was produced: "offline heuristic: <name>" or "provider:model"."""
    if mode == "offline":
        return f"offline heuristic: {heuristic}" if heuristic else "offline heuristic"
    return mode


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def advance(step: int, n_steps: int) -> tuple[int, bool]:
    """One tick of Play: the next step, and whether playing goes on (it stops at the last step)."""
    nxt = min(step + 1, n_steps - 1)
    return nxt, nxt < n_steps - 1
