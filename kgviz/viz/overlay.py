"""The evidence overlay: one graph with every method's retrieved nodes, coloured by method.

A node retrieved by one method takes that method's colour; a node retrieved by several is drawn
as "shared by k methods" in a grey that darkens with k, with a border in the colour of the first
method that found it and "×k" after its label (its tooltip lists the methods). Edges are the ones
the methods' traces walked between two drawn nodes, plus triple -> subject/object links looked up
in the store. Returns VizNode / VizEdge lists for ``graph_html`` (no streamlit import here).

With many methods most evidence is shared and the overlay turns grey; ``facet`` gives one small
graph per method instead, all drawn at the same positions (``overlay_positions``) so a node sits
at the same place in every facet: a method's own finds in its full colour, evidence it shares in a
paler tint of it (paler the more methods share it).

Method colours come from kgviz.viz.palette, the same on every page.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from kgviz.answer_norm import normalize_answer
from kgviz.graph import reads
from kgviz.graph.protocol import GraphStore
from kgviz.run import Run
from kgviz.viz.graph_html import LABEL_MAX_CHARS, CappedGraph, VizEdge, VizNode, cap_graph, graph_html, opaque_keys
from kgviz.viz.labels import fetch_human_labels
from kgviz.viz.layout import Position, force_layout
from kgviz.viz.palette import method_colour

DEFAULT_METHODS = ("kg-rag", "kg-retriever", "ket-rag")  # ours: three colours a room can tell apart
SHARED_LIGHT, SHARED_DARK = 0xBB, 0x22  # grey levels: shared by 2 methods ... shared by all
DEFAULT_CAP = 150
_KIND_TABLE = {"chunk": "Chunk", "subchunk": "SubChunk", "triple": "Triple", "entity": "Entity",
               "document": "Document", "keyword": "Keyword"}


def evidence_nodes(run: Run) -> dict[str, str]:
    """Graph node id -> table for everything the run's context came from (notes are not nodes)."""
    out: dict[str, str] = {}
    tables = {n.id: n.table for s in run.trace for n in s.nodes}
    for item in run.context.items:
        if item.kind in _KIND_TABLE:
            out[item.id] = _KIND_TABLE[item.kind]
    for node_id in run.context.node_ids:
        out.setdefault(node_id, tables.get(node_id) or _guess_table(node_id))
    return out


def _guess_table(node_id: str) -> str:
    if node_id.startswith("ent:"):
        return "Entity"
    if node_id.startswith("tri:"):
        return "Triple"
    if ".s" in node_id.rsplit("#", 1)[-1]:
        return "SubChunk"
    if "#c" in node_id:
        return "Chunk"
    if node_id.startswith("doc:"):
        return "Document"
    return "Entity"


def shared_role(k: int) -> str:
    return f"shared by {k} methods"


def method_colours(methods: Sequence[str]) -> dict[str, str]:
    """Method -> colour, then "shared by k methods" -> a grey that darkens as k grows, so evidence
    every method found stands out from evidence two methods happen to share."""
    colours = {m: method_colour(m) for m in methods}
    n = len(methods)
    for k in range(2, n + 1):
        level = SHARED_LIGHT - (SHARED_LIGHT - SHARED_DARK) * (k - 2) // max(1, n - 2)
        colours[shared_role(k)] = f"#{level:02x}{level:02x}{level:02x}"
    return colours


LABEL_PX = 15.0  # on-screen size of the key nodes' labels at any zoom (a projector at 1280×720)
TOP_PER_METHOD = 2  # each method's first evidence items (its ranking) are labelled
MAX_LABELS = 18  # beyond this many labels a whole-graph view is a tangle again


@dataclass
class Overlay:
    graph: CappedGraph
    colours: dict[str, str]  # method (or "shared by k methods") -> colour
    by_node: dict[str, list[str]]  # node id -> methods that retrieved it
    keys: frozenset[str] = frozenset()  # the key nodes (``key_nodes``), labelled in the overview

    @property
    def shared(self) -> int:
        return sum(len(ms) > 1 for ms in self.by_node.values())


def _labels(runs: Sequence[Run], store: GraphStore | None, tables: Mapping[str, str]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for run in runs:
        for item in run.context.items:
            labels.setdefault(item.id, item.text)
        for step in run.trace:
            for n in step.nodes:
                if n.label:
                    labels.setdefault(n.id, n.label)
    if store is not None:
        by_table: dict[str, list[str]] = {}
        for node_id, table in tables.items():
            by_table.setdefault(table, []).append(node_id)
        for table, ids in by_table.items():
            if table in reads.LABELLED_TABLES:
                for node_id, label in reads.node_labels(store, table, sorted(ids)).items():
                    # the store's name beats a step's free-form label ("Triple 3 (score .8)")
                    if table in ("Entity", "Document", "Triple") or node_id not in labels:
                        labels[node_id] = label or node_id
    return labels


GOLD_MARK = "★ gold"  # the label prefix of a node that names a gold answer
GOLD_BORDER = "#d4a017"


def names_gold(label: str, golds: Sequence[str]) -> bool:
    """True when ``label`` is a gold answer (an entity) or states one as a whole word (a fact,
    a chunk), compared as normalised answers are (case, punctuation, articles)."""
    text = f" {normalize_answer(label)} "
    return any(g and (text.strip() == g or f" {g} " in text) for g in (normalize_answer(x) for x in golds))


def build_overlay(runs: Sequence[Run], store: GraphStore | None = None, *, cap: int = DEFAULT_CAP,
                  golds: Sequence[str] = ()) -> Overlay:
    """Nodes/edges for ``graph_html``; ``store`` (optional) supplies names and triple links.
    A node whose label names one of ``golds`` is marked (label "★ gold …", a gold border) so the
    class sees which method reached the answer."""
    methods = [r.method for r in runs]
    colours = method_colours(methods)
    by_node: dict[str, list[str]] = {}
    tables: dict[str, str] = {}
    for run in runs:
        for node_id, table in evidence_nodes(run).items():
            by_node.setdefault(node_id, [])
            if run.method not in by_node[node_id]:
                by_node[node_id].append(run.method)
            tables.setdefault(node_id, table)
    labels = _labels(runs, store, tables)
    ranked = {run.method: list(evidence_nodes(run)) for run in runs}
    if store is not None:  # documents by title, chunks by title + first words (not ids or raw text)
        labels.update(fetch_human_labels(store, list(by_node)))
    # shared evidence first, so the cap never hides the overlap the view is about
    order = sorted(by_node, key=lambda i: (-len(by_node[i]), methods.index(by_node[i][0]), i))
    golden = {i for i in order if golds and names_gold(labels.get(i, i), golds)}
    priority = {k: n for n, k in enumerate(key_order(order, by_node, ranked, golden))}
    keys = set(priority)
    nodes: list[VizNode] = []
    for node_id in order:
        ms = by_node[node_id]
        role = shared_role(len(ms)) if len(ms) > 1 else ms[0]
        text = labels.get(node_id, node_id)
        gold = node_id in golden
        label = f"{text} ×{len(ms)}" if len(ms) > 1 else text
        nodes.append(VizNode(node_id, f"{GOLD_MARK}: {label}" if gold else label, tables[node_id],
                             role=role,  # type: ignore[arg-type]
                             title=f"{text}\n\nid: {node_id}\nretrieved by: {', '.join(ms)}"
                                   + ("\nnames the gold answer" if gold else ""),
                             size=14 + 4 * len(ms),
                             border=GOLD_BORDER if gold else (colours[ms[0]] if len(ms) > 1 else None),
                             quiet=node_id not in keys, rank=priority.get(node_id)))
    edges = _edges(runs, by_node, tables, store)
    return Overlay(cap_graph(nodes, edges, cap), colours, by_node, frozenset(keys))


def key_nodes(order: Sequence[str], by_node: Mapping[str, Sequence[str]], ranked: Mapping[str, Sequence[str]],
              golden: Sequence[str] | set[str], *, top: int = TOP_PER_METHOD, limit: int = MAX_LABELS) -> set[str]:
    """The nodes whose labels a whole-graph overlay draws, at most ``limit`` (``key_order``)."""
    return set(key_order(order, by_node, ranked, golden, top=top, limit=limit))


def key_order(order: Sequence[str], by_node: Mapping[str, Sequence[str]], ranked: Mapping[str, Sequence[str]],
              golden: Sequence[str] | set[str], *, top: int = TOP_PER_METHOD, limit: int = MAX_LABELS) -> list[str]:
    """The nodes whose labels a whole-graph overlay draws, at most ``limit``, by priority (the
    first first): those naming the gold answer; each method's first ``top`` evidence items, its
    ranking (in turns, so every method gets its first before any gets its second; more than
    ``top`` each when few methods share the ``limit``); then the ones found by the most methods
    (at least two; ``order`` puts them first). A graph of at most ``limit // 2`` nodes labels them
    all, in ``order``. A claim's cited nodes are added by ``highlight``."""
    if len(order) <= limit // 2:  # a small graph reads with every label
        return list(order)
    picked: list[str] = [i for i in order if i in golden]
    top = max(top, limit // 2 // max(1, len(ranked)))  # one or two methods: more of each ranking
    for rank in range(top):
        picked += [ids[rank] for ids in ranked.values() if rank < len(ids)]
    picked += [i for i in order if len(by_node[i]) > 1]
    return list(dict.fromkeys(i for i in picked if i in by_node))[:limit]


def _edges(runs: Sequence[Run], by_node: Mapping[str, list[str]], tables: Mapping[str, str],
           store: GraphStore | None) -> list[VizEdge]:
    seen: dict[tuple[str, str], VizEdge] = {}
    for run in runs:
        for step in run.trace:
            for e in step.edges:
                if e.source in by_node and e.target in by_node and (e.source, e.target) not in seen:
                    seen[(e.source, e.target)] = VizEdge(e.source, e.target, e.rel, title=e.rel)
    triples = sorted(i for i, t in tables.items() if t == "Triple")
    if store is not None and triples:
        for r in sorted(reads.triple_ends(store, triples), key=lambda r: r["id"]):
            for other, rel in ((r["s"], "subject"), (r["o"], "object"), (r["c"], "from chunk")):
                if other and other in by_node and (r["id"], other) not in seen and (other, r["id"]) not in seen:
                    seen[(r["id"], other)] = VizEdge(r["id"], other, rel, title=rel, dashes=rel == "from chunk")
    return list(seen.values())


def default_methods(methods: Sequence[str], n: int = len(DEFAULT_METHODS)) -> list[str]:
    """The methods the overlay starts with: the graph methods of DEFAULT_METHODS that ran, topped
    up in run order to ``n``."""
    picked = [m for m in DEFAULT_METHODS if m in methods]
    picked += [m for m in methods if m not in picked and m != "no-retrieval"][: max(0, n - len(picked))]
    return picked[:n] if picked else list(methods)[:n]


def _tint(colour: str, white: float) -> str:
    """``colour`` mixed with ``white`` (0 … 1) parts of white."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(c + (255 - c) * white):02x}" for c in (r, g, b))


LABEL_CHAR_PX = 0.62 * LABEL_PX  # a character of a key label on screen (DejaVu Sans averages ~0.6 em)
LAYOUT_BOX = (780.0, 480.0)  # the layout box: about the overlay frame's size on screen, in px (ours)


def overlay_positions(overlay: Overlay, *, seed: int = 7) -> dict[str, Position]:
    """One layout for every node of the overlay, so the overlay and its facets line up node for node.

    The box is about the size of the overlay's frame on screen, so the first view shows it at about
    1:1 and a layout unit is about a screen pixel: a key node's label (``key_nodes``), drawn at
    ``LABEL_PX`` on screen under the node, takes its own size in the layout, and the layout keeps
    the labels apart as far as the box allows (the page leaves a label that would still cover a
    more important one to its tooltip: ``graph_html``'s ``rank``). The other nodes carry no label
    in the overview and take their own size."""
    ids = [n.id for n in overlay.graph.nodes]
    sizes: dict[str, tuple[float, float]] = {}
    for n in overlay.graph.nodes:
        r = float(n.size or 14)
        if n.id in overlay.keys:  # the same places with a claim's nodes highlighted (labelled)
            text = min(len(n.label), LABEL_MAX_CHARS)
            # centred on the node, so twice the height of the label that hangs under it
            sizes[n.id] = (max(2 * r, LABEL_CHAR_PX * text) + 8, 2 * (r + 1.5 * LABEL_PX))
        else:
            sizes[n.id] = (2 * r + 10, 2 * r + 10)
    # not grown for a crowded overview: the labels keep their size on screen, so a bigger box (a view
    # zoomed further out) would only make them bigger on the layout
    width, height = LAYOUT_BOX
    return force_layout(ids, [(e.source, e.target) for e in overlay.graph.edges], width=width, height=height,
                        seed=seed, sizes=sizes)


def facet(overlay: Overlay, method: str) -> tuple[list[VizNode], list[VizEdge]]:
    """``method``'s nodes of the overlay: its own finds in its colour, shared ones in a tint of it
    that pales as more methods share them; the edges between them."""
    base = overlay.colours.get(method) or method_colour(method)
    n_methods = max(2, len({m for ms in overlay.by_node.values() for m in ms}))
    nodes: list[VizNode] = []
    for v in overlay.graph.nodes:
        ms = overlay.by_node.get(v.id, [])
        if method not in ms:
            continue
        k = len(ms)
        others = [m for m in ms if m != method]
        tint = base if k == 1 else _tint(base, 0.35 + 0.45 * (k - 2) / max(1, n_methods - 2))
        tip = v.title + ("\nonly this method found it" if k == 1 else f"\nalso found by: {', '.join(others)}")
        nodes.append(replace(v, colour=tint, border=None, title=tip, role=None, size=18 if k == 1 else 12,
                             quiet=False))  # a facet is one method's few nodes: all labelled
    ids = {n.id for n in nodes}
    return nodes, [e for e in overlay.graph.edges if e.source in ids and e.target in ids]


# claim -> evidence (kgviz.verify.evidence): the cited nodes stand out, everything else fades
HIGHLIGHT_BORDERS = {"supported": "#0d47a1", "contradicted": "#b71c1c"}
FADED = "#eeeeee"


def highlight(overlay: Overlay, node_ids: Sequence[str], label: str = "supported") -> tuple[Overlay, list[str]]:
    """``overlay`` with ``node_ids`` drawn larger, with a thick border in the verdict's colour
    (blue supported, red contradicted), and every other node faded; and the ids of
    ``node_ids`` that are on the graph (a cited node the methods' evidence does not hold, or that
    the cap left out, cannot be drawn)."""
    wanted = set(node_ids)
    border = HIGHLIGHT_BORDERS.get(label, "#000000")
    on = [n.id for n in overlay.graph.nodes if n.id in wanted]
    nodes = [replace(n, border=border, size=(n.size or 14) + 10, title=n.title + "\ncited by the judge", quiet=False)
             if n.id in wanted else replace(n, colour=FADED, border=None) for n in overlay.graph.nodes]
    graph = CappedGraph(nodes, overlay.graph.edges, overlay.graph.total_nodes)
    return Overlay(graph, overlay.colours, overlay.by_node, overlay.keys), on


def node_keys(overlay: Overlay, node_ids: Sequence[str]) -> list[str]:
    """The page keys (kgviz.viz.graph_html.opaque_keys) of those ``node_ids`` that are drawn."""
    keys = opaque_keys(overlay.graph.nodes)
    return [keys[i] for i in node_ids if i in keys]


# the case file's overlay listens for the claim a reader clicks (the parent posts the page keys of
# the cited nodes) and selects those nodes; keys only, never ids or text, cross the frame
_LISTEN_JS = """<script>
window.addEventListener("message", function (e) {
  var d = e.data || {};
  if (!Array.isArray(d.kgvizHighlight) || typeof network === "undefined" || !network) return;
  var have = {}; nodes.getIds().forEach(function (k) { have[k] = 1; });
  var keys = d.kgvizHighlight.filter(function (k) { return have[k] === 1; });
  network.selectNodes(keys, false);
  if (window.kgvizOverlay) { window.kgvizOverlay.reveal(keys); }  // cited nodes show their labels
  document.body.dataset.kgvizHighlighted = keys.join(" ");
});
</script>"""


def overlay_html(overlay: Overlay, *, height: int = 560, listen: bool = False) -> str:
    """The single overlay graph; its legend names every method drawn (a method whose every find is
    shared wears no colour of its own on the graph, yet rings its shared nodes) and the shared
    greys in use. Key nodes (``key_nodes``) are labelled at ``LABEL_PX`` on screen at any zoom, the
    rest only in their tooltips; the nodes stand where ``overlay_positions`` puts them (room for
    the key labels; the facets' places) and the first view holds every label whole. ``listen``: the case file's frame selects the nodes of the claim a reader clicks."""
    used = {n.role for n in overlay.graph.nodes}
    methods = list(dict.fromkeys(m for ms in overlay.by_node.values() for m in ms))
    roles = [r for r in overlay.colours if r in methods or r in used]
    page = graph_html(overlay.graph.nodes, overlay.graph.edges, height=height, role_colours=overlay.colours,
                      directed=False, legend_roles=roles, label_px=LABEL_PX, positions=overlay_positions(overlay))
    return page.replace("</body>", _LISTEN_JS + "\n</body>", 1) if listen else page
