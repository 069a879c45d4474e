"""Self-contained pyvis graph pages (no streamlit import).

``graph_html(nodes, edges, ...)`` returns one HTML document that works offline: vis-network is
inlined by pyvis (``cdn_resources='in_line'``) and every external ``<link>``/``<script src>`` the
pyvis template still adds (Bootstrap from a CDN) is removed.

Safety: labels and tooltips come from documents and LLMs. They are ``html.escape``d before they
reach the page, node ids are replaced by opaque ``n0, n1, ...`` so no document text is used as a
key, and pyvis serialises the data with Jinja's ``tojson`` (which also escapes ``<``, ``>`` and
``&``). A small script decodes the escaped text back to plain text in the browser with an inert
``DOMParser`` and hands vis-network plain strings (drawn on the canvas) and tooltip elements built
with ``textContent``, so no document text is ever interpreted as markup.
"""
from __future__ import annotations

import html
import math
import re
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from pyvis.network import Network

from kgviz.errors import KgvizError
from kgviz.methods.base import Role  # the trace roles: the Trace page colours nodes by them
from kgviz.safe_text import safe_text

#: highlight colours per trace role (shared with the Trace page legend)
ROLE_COLOURS: dict[str, str] = {
    "seed": "#7b2cbf",
    "candidate": "#f4a261",
    "chosen": "#2a9d8f",
    "rejected": "#e63946",
    "context": "#457b9d",
}

#: base colour and vis-network shape per Kùzu table when a node has no role
KIND_STYLE: dict[str, tuple[str, str]] = {
    "Entity": ("#9ecae1", "dot"),
    "Triple": ("#fdd0a2", "diamond"),
    "Chunk": ("#c7e9c0", "square"),
    "SubChunk": ("#d9d9d9", "triangle"),
    "Document": ("#dadaeb", "hexagon"),
    "Keyword": ("#fcbba1", "triangleDown"),
}
_DEFAULT_STYLE = ("#cccccc", "dot")
_EDGE_COLOUR = "#9a9a9a"
LABEL_MAX_CHARS = 40  # longer labels are cut on the canvas; the tooltip keeps the full text


@dataclass(frozen=True)
class VizNode:
    id: str
    label: str
    kind: str = "Entity"  # Kùzu table: picks shape and base colour
    title: str = ""  # tooltip, plain text; newlines are kept
    role: Role | None = None  # trace role: overrides the base colour
    size: float | None = None  # vis-network size; None = by kind
    colour: str | None = None  # explicit fill colour: overrides kind and role (Compare facets)
    border: str | None = None  # explicit border colour (Compare: the first method of a shared node)
    quiet: bool = False  # label kept for the tooltip and a selection, not drawn (a crowded overview)
    # with labels at a fixed size on screen (``label_px``): the label's priority, 0 first; a ranked
    # label that would cover one drawn before it waits, in its tooltip, until a zoom makes room
    rank: int | None = None


@dataclass(frozen=True)
class VizEdge:
    source: str
    target: str
    label: str = ""
    title: str = ""
    role: Role | None = None
    dashes: bool = False
    width: float | None = None  # line width; None = by role (3 for chosen/seed, else 1)


@dataclass(frozen=True)
class CappedGraph:
    nodes: list[VizNode]
    edges: list[VizEdge]
    total_nodes: int  # before the cap

    @property
    def shown_nodes(self) -> int:
        return len(self.nodes)

    def caption(self) -> str:
        return f"showing {self.shown_nodes} of {self.total_nodes} nodes"


def cap_graph(nodes: Sequence[VizNode], edges: Sequence[VizEdge], cap: int) -> CappedGraph:
    """Keep the first ``cap`` nodes (callers order them by importance, centre first) and the edges
    whose two ends survive. Duplicate node ids keep their first occurrence."""
    if cap < 1:
        raise KgvizError(f"node cap must be at least 1 (got {cap})")
    unique: dict[str, VizNode] = {}
    for n in nodes:
        unique.setdefault(n.id, n)
    kept = list(unique.values())[:cap]
    ids = {n.id for n in kept}
    kept_edges = [e for e in edges if e.source in ids and e.target in ids]
    return CappedGraph(kept, kept_edges, len(unique))


def _short(text: str, limit: int = LABEL_MAX_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _esc(text: str) -> str:
    # safe_text first: a bidi override in a name would otherwise draw it reversed (spoofing)
    return html.escape(safe_text(text), quote=True)


def physics_options(seed: int, *, directed: bool, stabilise_iterations: int = 150) -> dict:
    """vis-network options: a fixed random seed for a repeatable layout, a short stabilisation,
    then physics is switched off in the browser so the picture stops moving."""
    return {
        "layout": {"randomSeed": seed, "improvedLayout": True},
        "physics": {
            "enabled": True,
            "solver": "forceAtlas2Based",
            "forceAtlas2Based": {"gravitationalConstant": -60, "springLength": 110, "avoidOverlap": 0.4},
            "stabilization": {"enabled": True, "iterations": stabilise_iterations, "fit": True},
            "minVelocity": 1.0,
        },
        "interaction": {"hover": True, "tooltipDelay": 150},
        "nodes": {"font": {"size": 14, "face": "sans-serif"}, "borderWidth": 1},
        "edges": {
            "arrows": {"to": {"enabled": directed, "scaleFactor": 0.5}},
            "smooth": {"enabled": True, "type": "dynamic"},
            "font": {"size": 10, "align": "middle", "color": "#555555"},
            "color": {"color": _EDGE_COLOUR, "highlight": "#333333", "inherit": False},
        },
    }


def fixed_options(*, directed: bool) -> dict:
    """vis-network options when the caller gives every node's position: no physics and no
    automatic layout, so the picture is exactly the given one (the Trace page relies on it)."""
    opts = physics_options(0, directed=directed)
    opts["layout"] = {"improvedLayout": False}
    opts["physics"] = {"enabled": False}
    # "dynamic" curves need physics to place their control point; "continuous" does not
    opts["edges"]["smooth"] = {"enabled": True, "type": "continuous", "roundness": 0.2}
    return opts


# --- browser-side glue --------------------------------------------------------------------------
# Runs just before vis.Network is created: turns the escaped strings back into plain text for the
# canvas and into textContent-only tooltip elements; then freezes the layout once stabilised.
_PREPARE_JS = """
function kgvizText(s) {
  if (typeof s !== "string") { return s; }
  return new DOMParser().parseFromString(s, "text/html").documentElement.textContent;
}
function kgvizTip(s) {
  var d = document.createElement("div");
  d.className = "kgviz-tip";
  d.textContent = kgvizText(s);
  return d;
}
function kgvizPrepare(ds) {
  var out = [];
  ds.forEach(function (item) {
    var u = {id: item.id};
    if (typeof item.label === "string") { u.label = kgvizText(item.label); }
    if (typeof item.kgviz_tip === "string" && item.kgviz_tip.length) { u.title = kgvizTip(item.kgviz_tip); }
    out.push(u);
  });
  ds.update(out);
}
function kgvizFixedLabels(network, nodes, px) {
  // labels at ``px`` screen pixels whatever the zoom: the font (canvas units) follows the scale,
  // so a whole-graph view of 100+ nodes keeps its key nodes readable (quiet nodes carry no label)
  var applied = 0;
  // vis-network clamps a label over scaling.label.maxVisible (30 px) by rewriting that node's font,
  // which then goes stale at the next zoom: this function alone sizes labels here
  network.setOptions({nodes: {scaling: {label: {maxVisible: 1e6, drawThreshold: 1}}}});
  function font() { return px / Math.max(network.getScale(), 1e-3); }
  // checked after each frame and applied outside it: setOptions redraws at once, and a redraw
  // nested in a draw stacks the view transform twice (a zoomed-in picture with huge labels)
  var pending = false;
  network.on("afterDrawing", function () {
    if (pending || Math.abs(font() - applied) <= 1e-6 * font()) { return; }
    pending = true;
    setTimeout(function () {
      pending = false; applied = font(); network.setOptions({nodes: {font: {size: applied}}}); declutter();
    }, 0);
  });
  // ranked labels (kgviz_rank, 0 first) are drawn in turn, each only where it covers no label drawn
  // before it (unranked labels first, always drawn); the others wait in their tooltips until a zoom
  // makes room: at a fixed size on screen, labels part as the view zooms in
  var measure = document.createElement("canvas").getContext("2d");
  function declutter() {
    var all = nodes.get(), ranked = all.filter(function (n) { return typeof n.kgviz_rank === "number"; });
    if (!ranked.length) { return; }
    ranked.sort(function (a, b) { return a.kgviz_rank - b.kgviz_rank; });
    var s = Math.max(network.getScale(), 1e-3), at = network.getPositions(), placed = [], out = [];
    measure.font = px + "px sans-serif";
    function box(n, text) {
      var p = at[n.id], half = (measure.measureText(text).width / 2 + 3) / s, top = p.y + (n.size || 0);
      return [p.x - half, top, p.x + half, top + 1.4 * px / s];
    }
    function clear(b) {
      return placed.every(function (q) { return b[2] <= q[0] || q[2] <= b[0] || b[3] <= q[1] || q[3] <= b[1]; });
    }
    all.forEach(function (n) {
      if (typeof n.kgviz_rank !== "number" && typeof n.label === "string" && n.label.trim() && at[n.id]) {
        placed.push(box(n, n.label));
      }
    });
    ranked.forEach(function (n) {
      var text = kgvizText(n.kgviz_full), b = box(n, text), show = clear(b);
      if (show) { placed.push(b); }
      var want = show ? text : " ";
      if (n.label !== want) { out.push({id: n.id, label: want}); }
    });
    if (out.length) { nodes.update(out); }
  }
  function labelled() {
    return nodes.get().filter(function (n) { return typeof n.label === "string" && n.label.trim(); });
  }
  window.kgvizOverlay = {
    // on-screen px of the smallest label drawn in view: zoom x the height vis-network measured
    // for the label when it last drew it (one line: the font size it used); 0 when none is in view
    labelPx: function () {
      var s = network.getScale(), box = network.body.container.getBoundingClientRect(), px = [];
      labelled().forEach(function (n) {
        var node = network.body.nodes[n.id], at = network.canvasToDOM({x: node.x, y: node.y});
        var h = node.labelModule && node.labelModule.size ? node.labelModule.size.height : 0;
        if (h > 0 && at.x >= 0 && at.y >= 0 && at.x <= box.width && at.y <= box.height) { px.push(s * h); }
      });
      return px.length ? Math.min.apply(null, px) : 0;
    },
    labelled: function () { return labelled().length; },
    // show the label of ``keys`` (a claim's cited nodes) even where the overview keeps it quiet
    reveal: function (keys) {
      nodes.update(keys.map(function (k) { var n = nodes.get(k);  // unranked: drawn whatever it covers
        return {id: k, label: n && typeof n.kgviz_full === "string" ? kgvizText(n.kgviz_full) : n.label,
                kgviz_rank: null}; }));
    }
  };
}
function kgvizLook(network, container, box, nodes, px) {
  // show ``box`` (canvas units); with labels at ``px`` on screen (kgvizFixedLabels) the box also
  // takes in every label, centred under its node, at the scale it is shown with (a label is wider
  // on the canvas the more the view zooms out, hence a few rounds): no label is cut off at a border
  var w = container.clientWidth, h = container.clientHeight;
  if (!w || !h) { return; }
  var b = box, s = Math.min(w / (b[2] - b[0]), h / (b[3] - b[1])), shown = [];
  if (px) {
    var measure = document.createElement("canvas").getContext("2d"), at = network.getPositions();
    measure.font = px + "px sans-serif";
    shown = nodes.get().filter(function (n) { return typeof n.label === "string" && n.label.trim() && at[n.id]; })
      .map(function (n) { return {x: at[n.id].x, y: at[n.id].y, r: n.size || 0, w: measure.measureText(n.label).width}; });
  }
  for (var round = 0; round < 8 && shown.length; round++) {
    var nb = box.slice();
    shown.forEach(function (l) {
      var half = (l.w / 2 + 6) / s, below = l.y + l.r + 1.6 * px / s;
      nb = [Math.min(nb[0], l.x - half), nb[1], Math.max(nb[2], l.x + half), Math.max(nb[3], below)];
    });
    var ns = Math.min(w / (nb[2] - nb[0]), h / (nb[3] - nb[1]));
    b = nb;
    if (ns >= s * (1 - 1e-3)) { break; }
    s = ns;
  }
  network.moveTo({position: {x: (b[0] + b[2]) / 2, y: (b[1] + b[3]) / 2}, scale: s});
}
function kgvizLookAll(network, container, nodes, px) {
  // a physics layout, once it has settled: every node and its label in view
  var at = network.getPositions(), ids = Object.keys(at);
  if (!ids.length) { return; }
  var xs = ids.map(function (k) { return at[k].x; }), ys = ids.map(function (k) { return at[k].y; });
  kgvizLook(network, container, [Math.min.apply(null, xs) - 30, Math.min.apply(null, ys) - 30,
                                 Math.max.apply(null, xs) + 30, Math.max.apply(null, ys) + 30], nodes, px);
}
function kgvizView(network, container, box, nodes, px) {
  // show the whole layout box, whatever this page draws of it: pages that share positions then
  // also share the view, so a node stays at the same spot on screen from page to page
  function apply() { kgvizLook(network, container, box, nodes, px); }
  apply();
  window.addEventListener("resize", apply);
  network.once("afterDrawing", function () { document.body.dataset.kgvizStable = '1'; });
}
"""

_NETWORK_LINE = "network = new vis.Network(container, data, options);"
_NETWORK_PATCHED = (
    "kgvizPrepare(nodes); kgvizPrepare(edges);\n"
    "                  " + _NETWORK_LINE + "\n"
    '                  network.once("stabilizationIterationsDone", function () {'
    " network.setOptions({physics: false}); document.body.dataset.kgvizStable = '1'; });"
)
_FIXED_LABELS = "\n                  kgvizFixedLabels(network, nodes, {px:.1f});"
# a physics layout with labels at fixed px: the settled view takes in every label
_LOOK_ALL = ('\n                  network.once("stabilizationIterationsDone", function () {{'
             ' kgvizLookAll(network, container, nodes, {px:.1f}); }});')
_VIEW_PAD = (145.0, 45.0)  # room around the layout box for labels (wide) and node radius (ours)


def _view_patch(box: tuple[float, float, float, float], label_px: float | None = None) -> str:
    numbers = ", ".join(f"{v:.2f}" for v in box)
    px = "0" if label_px is None else f"{float(label_px):.1f}"
    return ("kgvizPrepare(nodes); kgvizPrepare(edges);\n"
            "                  " + _NETWORK_LINE + "\n"
            f"                  kgvizView(network, container, [{numbers}], nodes, {px});")


def _view_box(positions: Mapping[str, tuple[float, float]]) -> tuple[float, float, float, float]:
    xs = [float(p[0]) for p in positions.values()]
    ys = [float(p[1]) for p in positions.values()]
    return (min(xs) - _VIEW_PAD[0], min(ys) - _VIEW_PAD[1], max(xs) + _VIEW_PAD[0], max(ys) + _VIEW_PAD[1])

_STYLE = """
<style>
  body { margin: 0; font-family: sans-serif; }
  #mynetwork { float: none !important; box-sizing: border-box; }
  .kgviz-legend { display: flex; flex-wrap: wrap; gap: 12px; padding: 4px 6px; font-size: 12px; color: #333; }
  .kgviz-legend span.sw { display: inline-block; width: 11px; height: 11px; border-radius: 6px;
                           margin-right: 4px; vertical-align: -1px; border: 1px solid #777; }
  .kgviz-tip { white-space: pre-line; max-width: 420px; font-size: 12px; }
</style>
"""

# external resources pyvis adds even with in_line: drop them so the page works offline
_EXTERNAL_LINK = re.compile(r"<link\b[^>]*\bhref\s*=\s*[\"']?\s*(?:https?:)?//[^>]*>", re.I)
_EXTERNAL_SCRIPT = re.compile(
    r"<script\b[^>]*\bsrc\s*=\s*[\"']?\s*(?:https?:)?//[^>]*>\s*</script\s*>", re.I | re.S
)
_EMPTY_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>", re.I)
EXTERNAL_REF = re.compile(r"\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", re.I)


_TEMPLATES: list[Any] = []
_TEMPLATES_LOCK = threading.Lock()


def _template_env(fresh: Any) -> Any:
    """One jinja2 Environment for every page: pyvis gives each Network its own, so each graph
    recompiled pyvis's template (lexing and parsing it was ~5% of a Compare page's CPU). The
    first Network's environment is kept; jinja2 environments are safe to share between threads."""
    with _TEMPLATES_LOCK:
        if not _TEMPLATES:
            _TEMPLATES.append(fresh)
        return _TEMPLATES[0]


def strip_external(page: str) -> str:
    """Remove every <link>/<script> that points outside the document; fail loudly if any
    external src/href survives (a pyvis template change must not silently go online)."""
    page = _EXTERNAL_LINK.sub("", page)
    page = _EXTERNAL_SCRIPT.sub("", page)
    page = _EMPTY_HEADING.sub("", page)
    left = EXTERNAL_REF.search(page)
    if left:
        raise KgvizError(
            "the generated graph page still references an external resource",
            hint=f"pyvis template changed? near: {page[max(0, left.start() - 60): left.end() + 60]!r}",
        )
    return page


def legend_html(kinds: Iterable[str], roles: Iterable[str], role_colours: Mapping[str, str]) -> str:
    items: list[str] = []
    for kind in kinds:
        colour = KIND_STYLE.get(kind, _DEFAULT_STYLE)[0]
        items.append(f'<span><span class="sw" style="background:{colour}"></span>{_esc(kind)}</span>')
    for role in roles:
        colour = role_colours.get(role, _DEFAULT_STYLE[0])
        items.append(f'<span><span class="sw" style="background:{colour}"></span>{_esc(role)}</span>')
    return f'<div class="kgviz-legend" id="kgviz-legend">{"".join(items)}</div>'


def opaque_keys(nodes: Sequence[VizNode]) -> dict[str, str]:
    """Node id -> the key it has in the page (ids from documents never reach the page's script)."""
    keys: dict[str, str] = {}
    for node in nodes:
        keys.setdefault(node.id, f"n{len(keys)}")
    return keys


def graph_html(
    nodes: Sequence[VizNode],
    edges: Sequence[VizEdge],
    *,
    height: int = 560,
    role_colours: Mapping[str, str] | None = None,
    legend: bool = True,
    directed: bool = True,
    seed: int = 7,
    positions: Mapping[str, tuple[float, float]] | None = None,
    legend_roles: Sequence[str] | None = None,
    label_px: float | None = None,
) -> str:
    """One offline HTML page drawing ``nodes``/``edges`` with vis-network.

    ``legend_roles``: the roles the legend lists (default: those some node or edge has), so a
    page can name every colour it stands for, even one no drawn node wears alone.

    Nodes with a ``role`` take ``role_colours[role]`` (default ``ROLE_COLOURS``) and a thicker
    border; others are coloured by kind. Edges whose ends are unknown are dropped. The same seed
    and inputs give the same page, byte for byte.

    ``positions`` (node id -> x, y in canvas units, y down) fixes the picture: physics is off,
    every node is drawn where it says, and the view shows the bounding box of *all* the given
    positions (it may hold nodes this page does not draw), so pages built from one positions
    mapping line up. Every drawn node then needs a position. None: vis-network lays the graph
    out with seeded physics.
    """
    colours = dict(ROLE_COLOURS if role_colours is None else role_colours)
    if positions is not None:
        missing = [n.id for n in nodes if n.id not in positions]
        if missing or not positions:
            raise KgvizError(f"no position for {len(missing)} node(s), e.g. {missing[:3]!r}" if missing
                             else "positions were given but empty",
                             hint="lay out every node you draw (kgviz.viz.layout.force_layout)")
        bad = [k for k, p in positions.items() if not all(math.isfinite(float(v)) for v in p)]
        if bad:
            raise KgvizError(f"non-finite position for node(s) {bad[:3]!r}")
    net = Network(height=f"{int(height)}px", width="100%", directed=directed,
                  cdn_resources="in_line", notebook=False)
    net.templateEnv = _template_env(net.templateEnv)
    net.options = physics_options(seed, directed=directed) if positions is None else fixed_options(directed=directed)

    opaque = opaque_keys(nodes)
    drawn: set[str] = set()
    for node in nodes:
        if node.id in drawn:
            continue
        drawn.add(node.id)
        key = opaque[node.id]
        colour, shape = KIND_STYLE.get(node.kind, _DEFAULT_STYLE)
        if node.role:
            colour = colours.get(node.role, colour)
        if node.colour:
            colour = node.colour
        fill: str | dict = colour if not node.border else {
            "background": colour, "border": node.border,
            "highlight": {"background": colour, "border": "#000000"}}
        size = node.size if node.size is not None else (18 if node.kind == "Entity" else 12)
        place = {} if positions is None else {"x": float(positions[node.id][0]), "y": float(positions[node.id][1])}
        extra: dict[str, Any] = {"kgviz_full": _esc(_short(node.label))} if node.quiet or node.rank is not None else {}
        if node.rank is not None:
            extra["kgviz_rank"] = int(node.rank)
        net.add_node(
            key,
            label=" " if node.quiet else (_esc(_short(node.label)) or " "),
            shape=shape,
            color=fill,
            size=size,
            borderWidth=4 if node.border else (3 if node.role else 1),
            kgviz_tip=_esc(node.title or node.label),
            **place, **extra,
        )
    for edge in edges:
        if edge.source not in opaque or edge.target not in opaque:
            continue
        colour = colours.get(edge.role, _EDGE_COLOUR) if edge.role else _EDGE_COLOUR
        net.add_edge(
            opaque[edge.source],
            opaque[edge.target],
            label=_esc(_short(edge.label, 28)),
            kgviz_tip=_esc(edge.title or edge.label),
            color=colour,
            width=edge.width if edge.width is not None else (3 if edge.role in ("chosen", "seed") else 1),
            dashes=bool(edge.dashes or edge.role == "rejected"),
        )

    page = net.generate_html()
    if page.count(_NETWORK_LINE) != 1:
        raise KgvizError("unexpected pyvis template: cannot find where the network is created",
                         hint="kgviz expects pyvis 0.3.2")
    if label_px is not None and not (math.isfinite(label_px) and label_px > 0):
        raise KgvizError(f"label_px must be a positive number of pixels (got {label_px!r})")
    patch = _NETWORK_PATCHED if positions is None else _view_patch(_view_box(positions), label_px)
    if label_px is not None:
        patch += _FIXED_LABELS.format(px=float(label_px))
        if positions is None:
            patch += _LOOK_ALL.format(px=float(label_px))
    page = page.replace(_NETWORK_LINE, patch)
    head_extra = _STYLE + "<script>" + _PREPARE_JS + "</script>\n"
    page = page.replace("</head>", head_extra + "</head>", 1)
    if legend:
        kinds = sorted({n.kind for n in nodes})
        roles = list(legend_roles) if legend_roles is not None else [
            r for r in colours if any(n.role == r for n in nodes) or any(e.role == r for e in edges)]
        page = page.replace("<body>", "<body>\n" + legend_html(kinds, roles, colours), 1)
    return strip_external(page)


def iframe_height(height: int, legend: bool = True) -> int:
    """Height to give st.iframe so the graph and its legend fit without a scrollbar."""
    return int(height) + (40 if legend else 10)

