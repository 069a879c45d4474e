"""The Trace player: one self-contained HTML page per run that steps through the trace in the
browser (no streamlit import).

Why in the browser: the old viewer re-rendered the iframe on every Next or Play tick, so zoom and
pan were lost and Play showed half-drawn frames one step ahead of its panel. Here every step's
frame (which nodes and edges are shown, in which role, size and label) and its step panel are
embedded once as JSON; Previous / Next / the slider / Play only update vis-network's DataSets
and rewrite the panel, in the same script call, so:

- zoom and pan persist (the view only pans, at the user's zoom, when the step's nodes are out of
  view; "Fit step" and "Whole graph" change the zoom on request);
- the first view is fitted to the first step's nodes but never zoomed out below the scale at
  which labels are ``PlayerParams.min_label_px`` on screen;
- the panel always describes the step the graph shows.

Safety: document and LLM text reaches the page only inside a ``<script type="application/json">``
block with ``<``, ``>`` and ``&`` escaped as JSON unicode escapes; the script draws it as canvas
text (vis-network labels) or with ``textContent`` (panel, tooltips). Nothing is parsed as HTML.
vis-network comes from pyvis' bundled copy, inlined, so the page works offline.
"""
from __future__ import annotations

import json
import re
from html import escape
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from kgviz.errors import KgvizError
from kgviz.graph.protocol import GraphStore
from kgviz.methods import algorithm_lines, deciding
from kgviz.methods.base import TraceStep
from kgviz.safe_text import safe_strings
from kgviz.viz import step_panel as sp
from kgviz.viz.graph_html import EXTERNAL_REF, KIND_STYLE, LABEL_MAX_CHARS, ROLE_COLOURS, _short
from kgviz.viz.labels import TraceLinks
from kgviz.viz.trace import EARLIER, EARLIER_COLOUR, LINKED, LINKED_COLOUR, Frame

DIM_ROLES = (EARLIER, LINKED)  # pseudo-roles drawn dimmed: not what the current step did
COLOURS: dict[str, str] = {**ROLE_COLOURS, EARLIER: EARLIER_COLOUR, LINKED: LINKED_COLOUR}
LEGEND_NAMES = {EARLIER: "earlier steps", LINKED: "end of a fact (not visited)"}
SHAPE_NAMES = {"dot": "circle", "diamond": "diamond", "square": "square", "triangle": "triangle",
               "hexagon": "hexagon", "triangleDown": "down triangle"}
_SCHEMA_REL = re.compile(r"^[A-Z][A-Z_]+$")  # a rel table name rather than a fact's relation
REASON_MARK_CHARS = 30  # the reason drawn on a node's label is cut to this (the tooltip and the panel keep it whole)
NO_CHANGE_NOTE = "This step adds nothing to the graph: the nodes of the previous step stay highlighted."


@dataclass(frozen=True)
class PlayerParams:
    """How the player draws (all ours: chosen for a 1280×720 projector)."""

    height: int = 600  # iframe height in px: controls bar, timeline, graph/panel row
    font_px: int = 14  # node label font size in canvas units (on screen: × zoom)
    edge_font_px: int = 12
    min_label_px: float = 13.0  # the first view never zooms out below font_px × scale = this
    # presentation mode (a projector, read from the back row): bigger labels, never under 16 px
    present: bool = False  # start in presentation mode (the page's toggle and ?present=1 switch it too)
    present_font_px: int = 20
    present_edge_font_px: int = 16
    present_min_label_px: float = 16.0
    max_scale: float = 1.6  # nor zooms in beyond this (a one-node step would fill the screen)
    interval_ms: int = 1200  # Play at 1×: one step per interval (the speed menu divides it)
    pan_ms: int = 350  # the pan that brings a step's nodes into view (shorter than interval_ms)


@lru_cache(maxsize=1)
def vis_network_js() -> str:
    """pyvis' bundled vis-network (the version pyvis 0.3.2 inlines)."""
    import pyvis

    path = Path(pyvis.__file__).parent / "templates" / "lib" / "vis-9.1.2" / "vis-network.min.js"
    if not path.is_file():
        raise KgvizError("pyvis' bundled vis-network.min.js is missing", hint="kgviz expects pyvis 0.3.2")
    return path.read_text(encoding="utf-8").replace("</script", "<\\/script")


def _role_current(role: str | None) -> bool:
    return bool(role) and role not in DIM_ROLES


def _badges(trace: Sequence[TraceStep]) -> list[dict[str, str]]:
    """Per step, node id -> a short mark that stays from the step that set it onward:
    KG-Retriever's document hop ("hop 0" = a top-N document) and KET-RAG's channel."""
    out: list[dict[str, str]] = []
    hop: dict[str, str] = {}
    channel: dict[str, set[str]] = {}
    for s in trace:
        d = s.data or {}
        if isinstance(d.get("hop"), Mapping):
            for nid, h in d["hop"].items():
                hop[str(nid)] = f"hop {h}"
        ch = d.get("channel")
        if isinstance(ch, str) and ch:
            for n in s.nodes:
                if n.table != "Keyword":  # a keyword node only ever serves the keyword channel
                    channel.setdefault(n.id, set()).add(ch)
        now = {nid: h for nid, h in hop.items()}
        for nid, chs in channel.items():
            mark = "both channels" if len(chs) > 1 else next(iter(chs))
            now[nid] = f"{now[nid]} · {mark}" if nid in now else mark
        out.append(now)
    return out


def node_notes(step: TraceStep) -> dict[str, tuple[str, str]]:
    """Node id -> (label mark, tooltip line) for this step. The tooltip line names the node's role,
    deciding score, rank and reason; the label mark (drawn on the node itself) is the short form
    of the reason of a node that was not taken although it scores above a taken one, so the
    picture never shows a better-scored node rejected without saying why."""
    shown = {n.id for n in deciding.outranked(step.nodes) if n.reason}
    out: dict[str, tuple[str, str]] = {}
    for n in step.nodes:
        if n.id in out or not (n.reason or n.rank is not None or n.score is not None):
            continue
        line = f"this step: {n.role}"
        line += f", score {n.score:.3f}" if n.score is not None else ""
        line += f", #{n.rank}" if n.rank is not None else ""
        line += f" — {n.reason}" if n.reason else ""
        out[n.id] = (reason_mark(n.reason) if n.id in shown else "", line)
    return out


def reason_mark(reason: str) -> str:
    """A reason's head, for a node's label: up to its first ':', ';' or '(' ("over budget", "the
    chooser picked #3 of 5"), cut to REASON_MARK_CHARS."""
    return _short(re.split(r"[:;(]", reason, maxsplit=1)[0].strip(), REASON_MARK_CHARS)


def _edge_weights(trace: Sequence[TraceStep]) -> list[dict[tuple[str, str], float]]:
    """Per step, KG-Retriever's document-layer weight w of every SIMILAR_DOC edge seen so far."""
    out: list[dict[tuple[str, str], float]] = []
    w: dict[tuple[str, str], float] = {}
    for s in trace:
        for e in s.edges:
            if e.rel == "SIMILAR_DOC" and e.score is not None:
                w[(e.source, e.target)] = float(e.score)
        out.append(dict(w))
    return out


def _sizes(frame: Frame, step: TraceStep) -> dict[str, float]:
    """Node size by score within the step: the higher the score, the bigger (×0.75 … ×1.25)."""
    scores = {k: float(v) for k, v in step.scores.items() if isinstance(v, (int, float))}
    for n in step.nodes:
        if n.score is not None and n.id not in scores:
            scores[n.id] = float(n.score)
    base = {v.id: float(v.size if v.size is not None else 12.0) for v in frame.nodes}
    if len(scores) < 2:
        return base
    lo, hi = min(scores.values()), max(scores.values())
    span = hi - lo
    for nid, s in scores.items():
        if nid in base and span > 0:
            base[nid] = round(base[nid] * (0.75 + 0.5 * (s - lo) / span), 2)
    return base


_HOP = re.compile(r"^(Hop|Round) (\d+)")


def timeline_markers(trace: Sequence[TraceStep]) -> list[dict[str, str] | None]:
    """Per step, the timeline's marker or None: the first seed step, the first step of each hop
    or round, a backtrack, a step that cut something for the budget (a node's reason names the
    budget), and the answer."""
    out: list[dict[str, str] | None] = []
    seen_seed = False
    hops: set[str] = set()
    for s in trace:
        m = _HOP.match(s.title)
        if s.kind == "answer":
            mark = {"kind": "answer", "label": "answer"}
        elif s.kind == "prune":
            mark = {"kind": "backtrack", "label": "backtrack"}
        elif m and m.group(0) not in hops:
            hops.add(m.group(0))
            mark = {"kind": "hop", "label": f"{m.group(1).lower()} {m.group(2)}"}
        elif s.kind == "seed" and not seen_seed:
            mark = {"kind": "seed", "label": "seed"}
        elif any("budget" in n.reason for n in s.nodes):
            mark = {"kind": "budget", "label": "budget cut"}
        else:
            mark = None
        seen_seed = seen_seed or s.kind == "seed"
        out.append(mark)
    return out


def is_decision(step: TraceStep) -> bool:
    """A step the class can predict: it chose among candidates (some node chosen, some not)."""
    roles = {n.role for n in step.nodes}
    return step.kind in ("select", "score") and "chosen" in roles and bool(roles & {"rejected", "candidate"})


def player_data(frames: Sequence[Frame], trace: Sequence[TraceStep], labels: Mapping[str, str],
                params: PlayerParams = PlayerParams(), *, run: str = "", question: str = "") -> dict[str, Any]:
    """Everything the page needs, as JSON-ready data: the union of nodes and edges (with fixed
    positions), one visual per step (node/edge roles, sizes, marks) and one panel per step.
    ``run`` names the run (the method) on the page's body, for tests and screen readers;
    ``question``, when given, is shown above the bar (a lesson file has no page around it)."""
    if len(frames) != len(trace):
        raise KgvizError(f"{len(frames)} frames for a trace of {len(trace)} steps")
    positions = next((f.positions for f in frames if f.positions), None) or {}
    node_index: dict[str, int] = {}
    nodes: list[dict[str, Any]] = []
    edge_index: dict[tuple[str, str, str], int] = {}
    edges: list[dict[str, Any]] = []
    badges = _badges(trace)
    weights = _edge_weights(trace)
    markers = timeline_markers(trace)
    visuals: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    for i, (frame, step) in enumerate(zip(frames, trace)):
        for v in frame.nodes:
            if v.id not in node_index and v.id in positions:
                node_index[v.id] = len(nodes)
                colour, shape = KIND_STYLE.get(v.kind, ("#cccccc", "dot"))
                label = _short(labels.get(v.id) or v.label or v.id, LABEL_MAX_CHARS)
                x, y = positions[v.id]
                nodes.append({"label": label, "kind": v.kind, "shape": shape, "colour": colour,
                              "x": float(x), "y": float(y),
                              "tip": f"{labels.get(v.id) or v.label}\n{v.kind} · id {v.id}"})
        touched = bool(frame.roles or frame.edge_roles)
        if not touched and visuals:  # an evaluate / LLM step: keep the path in view
            steps.append({"v": len(visuals) - 1, "marker": markers[i], "decision": False,
                          "panel": sp.step_panel(trace, i, labels, note=NO_CHANGE_NOTE)})
            continue
        sizes = _sizes(frame, step)
        notes = node_notes(step)
        vnodes = []
        for v in frame.nodes:
            if v.id in node_index:
                role = str(v.role or EARLIER)
                mark, line = notes.get(v.id, ("", ""))
                vnodes.append([node_index[v.id], role, sizes.get(v.id, 12.0), badges[i].get(v.id, ""), mark, line])
        vedges = []
        for e in frame.edges:
            if e.source == e.target or e.source not in node_index or e.target not in node_index:
                continue
            key = (e.source, e.target, e.label or e.title)
            if key not in edge_index:
                edge_index[key] = len(edges)
                edges.append({"from": node_index[e.source], "to": node_index[e.target],
                              "tip": e.title or e.label})
            role = str(e.role or EARLIER)
            label, width = e.label, e.width if e.width is not None else (3.0 if role in ("chosen", "seed") else 1.0)
            w = weights[i].get((e.source, e.target)) if e.label == "SIMILAR_DOC" else None
            if w is not None:  # KG-Retriever: the document-layer weight is the point of the step
                label, width = f"w {w:.2f}", round(1.0 + 5.0 * max(0.0, min(1.0, w)), 2)
            if _SCHEMA_REL.match(label or ""):  # MENTIONS, HAS_CHUNK…: structure, named in the tooltip
                label = ""
            vedges.append([edge_index[key], role, width, _short(label, 28)])
        visuals.append({"nodes": vnodes, "edges": vedges})
        steps.append({"v": len(visuals) - 1, "marker": markers[i], "decision": is_decision(step),
                      "panel": sp.step_panel(trace, i, labels)})
    kinds = sorted({n["kind"] for n in nodes})
    return {
        "run": run, "question": question, "nodes": nodes, "edges": edges, "visuals": visuals, "steps": steps,
        "colours": COLOURS, "legendNames": LEGEND_NAMES, "dim": list(DIM_ROLES),
        "shapes": [[SHAPE_NAMES.get(KIND_STYLE.get(k, ("", "dot"))[1], "circle"), k] for k in kinds],
        "font": params.font_px, "edgeFont": params.edge_font_px, "minLabelPx": params.min_label_px,
        "present": params.present, "presentFont": params.present_font_px,
        "presentEdgeFont": params.present_edge_font_px, "presentMinLabelPx": params.present_min_label_px,
        "maxScale": params.max_scale, "interval": params.interval_ms, "panMs": params.pan_ms,
        "algo": algorithm_lines.box_data(run, trace),
    }


def _json_for_script(data: Mapping[str, Any]) -> str:
    # inside <script type="application/json"> only "</script" could end the block; escaping every
    # <, > and & keeps any markup in document text inert
    text = json.dumps(safe_strings(data), ensure_ascii=False, separators=(",", ":"))  # bidi/controls shown escaped
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_ASSETS = Path(__file__).parent / "assets"


@lru_cache(maxsize=2)
def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _pane(k: int) -> str:
    """One run's graph, legend, algorithm box and panel; the first pane's parts keep the ids the
    tests and the single-run page have always used."""
    sfx = "" if k == 0 else f"-{k + 1}"

    def part(name: str, extra: str = "") -> str:
        return f'<div class="kp-{name}" id="kp-{name}{sfx}"{extra}></div>'

    live = ' aria-live="polite"'
    return (f'<div class="kp-pane" id="kp-pane{sfx}"><div class="kp-graphcol">{part("legend")}'
            f'<div class="kp-graphbox" id="kp-graphbox{sfx}">{part("graph")}{part("empty")}</div>'
            f'{part("view", live)}</div>'
            f'<div class="kp-side">{part("algo")}{part("panel", live)}</div></div>')


def player_html(data: Mapping[str, Any] | Sequence[Mapping[str, Any]], params: PlayerParams = PlayerParams(),
                *, title: str = "kgviz trace", full_height: bool = False) -> str:
    """The page: controls bar and timeline, then per run its graph (vis-network) beside its
    algorithm box and step panel, all client-side. ``data`` is one run's ``player_data`` or a
    list of two, shown side by side and stepped together. ``full_height``: the page fills the
    browser window (a lesson file) rather than an iframe of ``params.height``."""
    runs = [data] if isinstance(data, Mapping) else list(data)
    if not 1 <= len(runs) <= 2:
        raise KgvizError(f"the player shows one or two runs, not {len(runs)}")
    height = "100vh" if full_height else f"{int(params.height)}px"
    blocks = "".join(
        f'<script type="application/json" id="kp-data{"" if k == 0 else f"-{k + 1}"}">{_json_for_script(d)}</script>'
        for k, d in enumerate(runs))
    page = (
        f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
        f"<style>{_asset('trace_player.css')}</style>"
        f"<script>{vis_network_js()}</script></head>"
        f"<body class=\"{'two' if len(runs) == 2 else 'one'}\" style=\"height:{height}\">"
        "<div id=\"kp-question\"></div><div id=\"kp-bar\">"
        "<button id=\"kp-prev\" type=\"button\" title=\"Previous step (←)\">Previous</button>"
        "<button id=\"kp-play\" type=\"button\" title=\"Play / pause (space)\">Play</button>"
        "<button id=\"kp-next\" type=\"button\" title=\"Next step (→)\">Next</button>"
        "<select id=\"kp-speed\" aria-label=\"Play speed\" title=\"Play speed\"></select>"
        "<span id=\"kp-count\"></span>"
        "<button id=\"kp-fit\" type=\"button\" title=\"Zoom to this step's nodes\">Fit step</button>"
        "<button id=\"kp-all\" type=\"button\" title=\"Show every node drawn so far\">Whole graph</button>"
        "<button id=\"kp-quiz\" type=\"button\" aria-pressed=\"false\" "
        "title=\"Stop at each decision: predict the method's choice, then reveal it\">Predict</button>"
        "<button id=\"kp-reveal\" type=\"button\" hidden title=\"Show the method's choice and why\">Reveal</button>"
        "<button id=\"kp-present\" type=\"button\" aria-pressed=\"false\" "
        "title=\"Presentation mode: large labels and text for a projector\">Present</button>"
        "</div><div id=\"kp-timeline\" aria-label=\"Timeline: click a step to jump there\"></div>"
        f"<div id=\"kp-main\">{''.join(_pane(k) for k in range(len(runs)))}</div>"
        f"{blocks}<script>{_asset('trace_player.js')}</script></body></html>"
    )
    left = EXTERNAL_REF.search(page)
    if left:
        raise KgvizError("the trace player page references an external resource",
                         hint=f"near: {page[max(0, left.start() - 60): left.end() + 60]!r}")
    return page


def run_frames(trace: Sequence[TraceStep], store: GraphStore, *, links: TraceLinks | None = None,
               stable_layout: bool = True) -> tuple[list[Frame], dict[str, str]]:
    """One frame per step and every node's label: human labels and the facts' ends from
    ``store`` (its ``query``); with ``stable_layout`` one layout shared by every frame."""
    from kgviz.viz import trace as vt
    from kgviz.viz.labels import fetch_human_labels, fetch_links

    ids = [n.id for s in trace for n in s.nodes] + [x for s in trace for e in s.edges for x in (e.source, e.target)]
    names = fetch_human_labels(store, ids)
    if links is None:
        links = fetch_links(store, vt.triple_ids(trace))
    frames = vt.build_frames(trace, triple_links=links.links, link_labels=links.labels, human_labels=names,
                             stable_layout=stable_layout)
    labels = {nid: lab for nid, (lab, _t) in vt.node_labels(trace).items()}
    labels.update({nid: lab for nid, (lab, _t) in links.labels.items() if nid not in labels})
    labels.update(names)
    return frames, labels


def run_page(trace: Sequence[TraceStep], store: GraphStore, *, method: str = "",
             links: TraceLinks | None = None, params: PlayerParams = PlayerParams(),
             built: tuple[list[Frame], dict[str, str]] | None = None) -> str:
    """The whole pipeline for one run: frames and labels (``run_frames``; ``built``: those the
    caller already made), one panel per step, the algorithm box (each step's line:
    kgviz.methods.algorithm_lines), the page."""
    algorithm_lines.annotate(method, trace)  # a run saved before steps named their line
    frames, labels = built if built is not None else run_frames(trace, store, links=links)
    return player_html(player_data(frames, trace, labels, params, run=method), params)


def iframe_height(params: PlayerParams = PlayerParams()) -> int:
    return int(params.height) + 4
