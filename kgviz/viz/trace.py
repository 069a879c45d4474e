"""A run's trace as frames for the Trace page (pure: no streamlit).

Frame ``i`` is the subgraph every step up to ``i`` touched. The nodes and edges step ``i`` itself
touched carry their role in that step (seed, candidate, chosen, rejected, context); everything an
earlier step touched is drawn in one dim colour ("earlier"), whatever its role was then, so the
eye goes to what this step did. A node's tooltip keeps its history ("step 3: chosen").

Edges of a step often join nodes the step does not list (kg-rag draws a fact as an edge between
its two entities but lists only the Triple node). Such ends are added as nodes too, so the edge
is drawn; their label comes from any step that names them, else their id.

Triple nodes (facts) can be tied to their subject and object: given ``triple_links`` (triple id
-> subject id, object id, read from the store), every shown fact gets two thin edges to its ends
in the fact's colour. An end no step has touched yet is drawn as a small, pale "linked" node.

The whole run shares one layout (kgviz.viz.layout): the union of every frame's nodes is laid out
once and each frame draws its nodes at those fixed places, so stepping changes the highlighting,
never the picture.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence, TypeGuard, cast

from kgviz.methods.base import EdgeRef, Role, TraceStep
from kgviz.viz.graph_html import (
    KIND_STYLE, LABEL_MAX_CHARS, ROLE_COLOURS, VizEdge, VizNode, cap_graph, graph_html, iframe_height, legend_html,
)
from kgviz.viz.layout import Position, canvas_size, force_layout

EARLIER = "earlier"  # pseudo-role of elements an earlier step touched
EARLIER_COLOUR = "#dcdcdc"
LINKED = "linked"  # pseudo-role of a fact's subject/object that no step has touched yet
LINKED_COLOUR = "#f3f3f3"
FRAME_COLOURS: dict[str, str] = {**ROLE_COLOURS, EARLIER: EARLIER_COLOUR, LINKED: LINKED_COLOUR}
_LEGEND_NAMES = {EARLIER: "earlier steps", LINKED: "end of a fact (not visited)"}
DEFAULT_CAP = 150  # nodes per frame; the current step's nodes are kept first
LAYOUT_HEIGHT = 520.0  # layout units of one screen; the page zooms the layout box to fit
LINK_RELS = ("subject", "object")  # names of a fact's two links (tooltips; edge keys)
# when one step lists an element twice with different roles, the strongest statement wins
_ROLE_RANK: dict[str, int] = {"chosen": 5, "seed": 4, "context": 3, "rejected": 2, "candidate": 1}
_SHAPES = {"dot": "dot", "diamond": "diamond", "square": "square", "triangle": "triangle",
           "hexagon": "hexagon", "triangleDown": "down triangle"}

TripleLinks = Mapping[str, tuple[str, str]]  # triple id -> (subject id, object id)
EdgeKey = tuple[str, str, str]  # (source, target, rel)


@dataclass(frozen=True)
class Frame:
    index: int
    step: TraceStep
    nodes: list[VizNode]  # capped, in first-appearance order
    edges: list[VizEdge]  # the trace's edges, then the facts' subject/object links
    roles: dict[str, str]  # node id -> role in this step (only nodes this step touched)
    edge_roles: dict[EdgeKey, str]  # (source, target, rel) -> role in this step
    total_nodes: int  # cumulative, before the cap
    # the run's shared layout (node id -> x, y); None: the page lays this frame out by itself
    positions: Mapping[str, Position] | None = None

    @property
    def caption(self) -> str:
        shown = len(self.nodes)
        base = f"step {self.index + 1}: {len(self.roles)} node(s) and {len(self.edge_roles)} edge(s) touched"
        base += f"; graph so far: {self.total_nodes} node(s)"
        return base + (f", showing {shown}" if shown < self.total_nodes else "")


@dataclass
class _Seen:
    kind: str
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


def triple_ids(trace: Sequence[TraceStep]) -> list[str]:
    """Ids of the Triple nodes a trace lists, in first-appearance order (what to ask the store
    for ``triple_links``)."""
    return list(dict.fromkeys(n.id for s in trace for n in s.nodes if n.table == "Triple"))


def _edge_key(e: EdgeRef) -> EdgeKey:
    return (e.source, e.target, e.rel)


def _step_roles(step: TraceStep) -> tuple[dict[str, str], dict[EdgeKey, str]]:
    nodes: dict[str, str] = {}
    for n in step.nodes:
        nodes[n.id] = _strongest(nodes.get(n.id), n.role)
    edges: dict[EdgeKey, str] = {}
    for e in step.edges:
        if e.source and e.target:
            edges[_edge_key(e)] = _strongest(edges.get(_edge_key(e)), e.role)
    return nodes, edges


def build_frames(
    trace: Sequence[TraceStep],
    *,
    cap: int = DEFAULT_CAP,
    triple_links: TripleLinks | None = None,
    link_labels: Mapping[str, tuple[str, str]] | None = None,
    stable_layout: bool = True,
    seed: int = 7,
    human_labels: Mapping[str, str] | None = None,
) -> list[Frame]:
    """One frame per step, in trace order. Deterministic: the same inputs give equal frames.

    ``triple_links`` ties each shown Triple node to its subject and object (an end may be an
    entity or, for a hypernode, another triple); ``link_labels`` names ends that no step names
    (id -> (label, table)). With ``stable_layout`` every frame carries the same positions: the
    union of all frames' nodes laid out once with ``seed``. ``human_labels`` (id -> label, from
    kgviz.viz.labels) replace the trace's own labels of documents and chunks (file stems, ids).
    """
    links = dict(triple_links or {})
    names = _merge_names(node_labels(trace), link_labels or {})
    for nid, label in (human_labels or {}).items():
        if label:
            names[nid] = (label, names.get(nid, ("", ""))[1])
    seen: dict[str, _Seen] = {}
    order: dict[str, int] = {}  # node id -> order of first appearance (seen or linked)
    seen_edges: dict[EdgeKey, int] = {}  # key -> order of first appearance
    link_order: dict[EdgeKey, int] = {}
    last_touch: dict[str, int] = {}
    frames: list[Frame] = []
    for i, step in enumerate(trace):
        roles, edge_roles = _step_roles(step)
        scores = {n.id: n.score for n in step.nodes if n.score is not None}
        ends = [x for key in edge_roles for x in key[:2]]
        for nid in list(roles) + ends:
            if nid not in seen:
                label, table = names.get(nid, ("", ""))
                seen[nid] = _Seen(table or "Entity", label or nid)
                order.setdefault(nid, len(order))
            last_touch[nid] = i
        for nid, role in roles.items():
            seen[nid].history.append(f"step {i + 1}: {role}")
        for key in edge_roles:
            seen_edges.setdefault(key, len(seen_edges))
        link_edges, linked = _links(seen, links, seen_edges, roles, last_touch)
        for key in link_edges:
            link_order.setdefault(key, len(link_order))
        for nid in linked:
            order.setdefault(nid, len(order))
        # cap priority: this step's nodes, then edge ends and the ends of this step's facts,
        # then the most recently touched
        every = list(seen) + list(linked)
        priority = sorted(every, key=lambda n: (n not in roles, -(last_touch[n] if n in seen else linked[n][0]),
                                                order[n]))
        vnodes = [_viz_node(nid, seen[nid], roles.get(nid), scores.get(nid)) if nid in seen
                  else _linked_node(nid, names, linked[nid][1]) for nid in priority]
        vedges = [_viz_edge(key, edge_roles.get(key)) for key in sorted(seen_edges, key=seen_edges.__getitem__)]
        vedges += [_link_edge(key, link_edges[key]) for key in sorted(link_edges, key=link_order.__getitem__)]
        capped = cap_graph(vnodes, vedges, cap)
        ordered = sorted(capped.nodes, key=lambda v: order[v.id])
        frames.append(Frame(i, step, ordered, capped.edges, roles, edge_roles, capped.total_nodes))
    if not stable_layout:
        return frames
    positions = run_layout(frames, seed=seed)
    if not positions:  # no step touched the graph: nothing to lay out
        return frames
    return [replace(f, positions=positions) for f in frames]


def _merge_names(traced: Mapping[str, tuple[str, str]],
                 stored: Mapping[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """The trace's own labels and tables win; the store's fill in what the trace leaves empty."""
    out = dict(stored)
    for nid, (label, table) in traced.items():
        old_label, old_table = out.get(nid, ("", ""))
        out[nid] = (label or old_label, table or old_table)
    return out


def _links(
    seen: Mapping[str, _Seen],
    links: Mapping[str, tuple[str, str]],
    trace_edges: Mapping[EdgeKey, int],
    roles: Mapping[str, str],
    last_touch: Mapping[str, int],
) -> tuple[dict[EdgeKey, str], dict[str, tuple[int, str]]]:
    """The subject/object links of every fact seen so far (key -> the fact's role now) and the
    ends no step has touched yet (id -> (latest touch of a fact needing it, "subject of ..."))."""
    joined = {frozenset(k[:2]) for k in trace_edges}  # a pair the trace already joins needs no link
    edges: dict[EdgeKey, str] = {}
    linked: dict[str, tuple[int, str]] = {}
    for tid in seen:
        if tid not in links:
            continue
        for rel, end in zip(LINK_RELS, links[tid]):
            if not end or end == tid or frozenset((tid, end)) in joined:
                continue
            edges[(tid, end, rel)] = roles.get(tid, EARLIER)
            if end not in seen:
                touch = max(last_touch[tid], linked.get(end, (-1, ""))[0])
                linked[end] = (touch, linked.get(end, (0, f"{rel} of {seen[tid].label}"))[1])
    return edges, linked


_CHAR_W = 8.0  # canvas units per label character at the 14 px label font (DejaVu Sans averages ~8)
_LABEL_H = 17.0  # how far a 14 px label line reaches below its node (vis-network: a gap, then the line)


CHOICE_MAX = 12  # a step choosing among at most this many nodes is laid out as one group (ours)


def choice_pairs(frames: Sequence[Frame]) -> list[tuple[str, str]]:
    """Extra pulls for the layout: in a step that chose some nodes and rejected others (at most
    CHOICE_MAX of them), each rejected node is tied to each chosen one, so the contrast of the
    step (what was taken, what was passed over) lands in one place and "Fit step" shows it at a
    legible zoom instead of zooming out over the whole graph."""
    out: list[tuple[str, str]] = []
    for f in frames:
        chosen = [n for n, r in f.roles.items() if r == "chosen"]
        rejected = [n for n, r in f.roles.items() if r == "rejected"]
        if chosen and rejected and len(chosen) + len(rejected) <= CHOICE_MAX:
            out += [(c, r) for c in chosen for r in rejected]
    return out


def run_layout(frames: Sequence[Frame], *, seed: int = 7) -> dict[str, Position]:
    """One layout for every node any frame shows, pulled together by every edge any frame draws
    and by each small choice's chosen-rejected pairs (``choice_pairs``), with room for the widest label and the biggest size each node is drawn with."""
    sizes: dict[str, tuple[float, float]] = {}
    for f in frames:
        for v in f.nodes:
            r = v.size if v.size is not None else 12.0
            w = max(2 * r, _CHAR_W * min(len(v.label), LABEL_MAX_CHARS)) + 8
            # the label hangs below the node: a footprint centred on the node covers it only when it
            # reaches as far above (a label line under a node then never covers the node below)
            h = 2 * (r + _LABEL_H)
            old = sizes.get(v.id, (0.0, 0.0))
            sizes[v.id] = (max(old[0], w), max(old[1], h))
    pairs = list(dict.fromkeys([(e.source, e.target) for f in frames for e in f.edges] + choice_pairs(frames)))
    width, height = canvas_size(len(sizes), height=LAYOUT_HEIGHT, footprint=sum(w * h for w, h in sizes.values()))
    return force_layout(list(sizes), pairs, width=width, height=height, seed=seed, sizes=sizes)


def _viz_node(nid: str, info: _Seen, role: str | None, score: float | None) -> VizNode:
    tip = [info.label, f"{info.kind} {nid}"]
    if score is not None:
        tip.append(f"score this step: {score:.4g}")
    tip += info.history[-6:]  # recent history only: a hub node can be touched by every step
    base = 18.0 if info.kind == "Entity" else 12.0
    return VizNode(nid, info.label, info.kind, "\n".join(tip),
                   cast(Role, role or EARLIER), size=base * 1.5 if role else base)


def _linked_node(nid: str, names: Mapping[str, tuple[str, str]], why: str) -> VizNode:
    label, table = names.get(nid, ("", ""))
    kind = table or "Entity"
    tip = [label or nid, f"{kind} {nid}", f"no step touched it yet; shown as the {why}"]
    return VizNode(nid, label or nid, kind, "\n".join(tip), cast(Role, LINKED),
                   size=10.0 if kind == "Entity" else 7.0)


def _viz_edge(key: EdgeKey, role: str | None) -> VizEdge:
    source, target, rel = key
    return VizEdge(source, target, rel, rel, cast(Role, role or EARLIER))


def _link_edge(key: EdgeKey, role: str) -> VizEdge:
    source, target, rel = key
    # no label: the fact's text already says it; thin so the step's own edges stand out
    return VizEdge(source, target, "", f"{rel} of the fact", cast(Role, role), width=1)


def frame_legend(frame: Frame) -> str:
    """Legend HTML: the roles drawn in this frame (plus "earlier" / "linked"), then which shape
    is which table."""
    used = set(frame.roles.values()) | set(frame.edge_roles.values())
    for pseudo in (EARLIER, LINKED):
        if any(v.role == pseudo for v in frame.nodes) or any(e.role == pseudo for e in frame.edges):
            used.add(pseudo)
    names = {r: _LEGEND_NAMES.get(r, r) for r in FRAME_COLOURS if r in used}
    legend = legend_html([], list(names.values()), {names[r]: FRAME_COLOURS[r] for r in names})
    kinds = sorted({v.kind for v in frame.nodes})
    shapes = ", ".join(f"{_SHAPES.get(KIND_STYLE.get(k, ('', 'dot'))[1], 'dot')} = {k}" for k in kinds)
    if shapes:
        legend = legend.replace("</div>", f"<span>shapes: {html.escape(shapes)}</span></div>", 1)
    return legend


def frame_html(frame: Frame, *, height: int = 520, positions: Mapping[str, Position] | None = None) -> str:
    """The frame as one offline pyvis page (kgviz.viz.graph_html) with the trace legend on top.
    Drawn at ``positions`` (default: the frame's shared layout); with neither, vis-network lays
    the frame out by itself."""
    where = positions if positions is not None else frame.positions
    page = graph_html(frame.nodes, frame.edges, height=height, role_colours=FRAME_COLOURS, legend=False,
                      positions=where)
    return page.replace("<body>", "<body>\n" + frame_legend(frame), 1)


def frame_iframe_height(height: int = 520) -> int:
    return iframe_height(height, legend=True)


# --- per-step extras shown beside the graph ------------------------------------------------------
CONTEXT_SHARE = "context"  # a channel budget's default kind: its share of the answer's context
POOL = "pool"  # the keyword channel's candidate pool (kgviz.methods.ket_narrator.POOL)


@dataclass(frozen=True)
class Budget:
    channel: str
    used: int
    budget: int
    of: str = CONTEXT_SHARE  # what the numbers are a share of: CONTEXT_SHARE or POOL

    @property
    def fraction(self) -> float:
        return 0.0 if self.budget <= 0 else max(0.0, min(1.0, self.used / self.budget))

    @property
    def label(self) -> str:
        """What the bar says, naming what its numbers are a share of."""
        if self.of == POOL:
            return (f"{self.channel} channel, candidate pool: {self.used:,} of {self.budget:,} tokens gathered to be "
                    "ranked (2·(1−θ)·λ, twice the channel's share of the context)")
        share = "θ·λ" if self.channel == "skeleton" else "(1−θ)·λ" if self.channel == "keyword" else "its share"
        return f"{self.channel} channel, in the context: {self.used:,} of {self.budget:,} tokens ({share})"


def channel_budgets(trace: Sequence[TraceStep], index: int) -> list[Budget]:
    """KET-RAG: each channel's latest token use/budget at or before step ``index``, per kind
    (``data["budget_of"]``: the channel's share of the context, or the keyword channel's candidate
    pool), in order of first appearance. Steps without ``data["channel"]`` are ignored."""
    latest: dict[tuple[str, str], Budget] = {}
    for s in trace[: index + 1]:
        d = s.data or {}
        ch, used, budget = d.get("channel"), d.get("used"), d.get("budget")
        of = POOL if d.get("budget_of") == POOL else CONTEXT_SHARE
        if isinstance(ch, str) and _is_number(used) and _is_number(budget):
            latest[(ch, of)] = Budget(ch, int(used), int(budget), of)
    return list(latest.values())


def context_total(budgets: Sequence[Budget]) -> str:
    """One line adding up the channels' shares of the context, when there are two (the answer
    step's "tokens used" of λ is this sum, so the numbers tell one story)."""
    shares = [b for b in budgets if b.of == CONTEXT_SHARE]
    if len(shares) < 2:
        return ""
    used = " + ".join(f"{b.used:,}" for b in shares)
    return (f"context so far: {used} = {sum(b.used for b in shares):,} of {sum(b.budget for b in shares):,} "
            "tokens (λ = θ·λ + (1−θ)·λ)")


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


def llm_mode_label(mode: str, heuristic: str = "") -> str:
    """How the step's reasoning was produced: "offline heuristic: <name>" or "provider:model"."""
    if mode == "offline":
        return f"offline heuristic: {heuristic}" if heuristic else "offline heuristic"
    return mode


def _is_number(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool)
