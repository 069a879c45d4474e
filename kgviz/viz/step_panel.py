"""What the Trace player shows beside the graph for one step, as plain data (no streamlit, no
HTML): the header, why the step decided what it did (candidates with scores and chosen / rejected
marks, plus any per-node numbers the method recorded such as KG-Retriever's weights w or hop),
budgets, activation round, the LLM task and the step's cost, and the "ours" mark of a step that
departs from the method's paper (TraceStep.ours: the reason, drawn under the title).

Every value is a plain string or number; the player writes them with ``textContent`` only.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from kgviz.methods.base import TraceStep
from kgviz.viz import trace as vt

MAX_ROWS = 60  # candidate rows per step (ours: a projector shows ~15; the rest scroll)
MAX_EXTRA_COLUMNS = 3  # per-node numbers from step.data shown as columns
# ours: entries of a list cell shown before "+N more" (a chunk linked to 30 facts squeezed the node
# column to a few letters at 1280 px); the step's raw data below the table keeps them all
MAX_LIST_ENTRIES = 3
# the node kinds a row names when a step mixes them (a text-unit step lists sub-chunks and their chunks)
KIND_NAMES: dict[str, str] = {"SubChunk": "sub-chunk", "Chunk": "chunk", "Entity": "entity", "Triple": "fact",
                              "Keyword": "keyword", "Document": "document"}
MARKS: dict[str, str] = {"chosen": "✓ chosen", "rejected": "✗ rejected", "candidate": "candidate",
                         "seed": "seed", "context": "in context"}
# data keys whose per-node numbers explain a choice, with a reader's name (others keep their key)
DATA_COLUMNS: dict[str, str] = {"w": "weight w", "cosine": "cosine", "hop": "hop", "triple_cosine": "fact cosine",
                                "ranks": "ranks", "links": "linked to"}
# KG-Infused's data["direction"]: the edges spreading activation followed
DIRECTIONS = {"out": "outgoing only (head → tail)", "both": "outgoing and incoming (to the head too)"}
_RAW_LIMIT = 20_000  # characters of the step's raw JSON kept in the page
_PROMPT_LIMIT = 30_000


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _fmt(x: Any) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:.3f}"
    if isinstance(x, (list, tuple)):
        return ", ".join(_fmt(v) for v in x)
    return str(x)


def _parts_text(parts: Mapping[str, float]) -> str:
    """A score's terms as one cell ("similarity 0.119 · planned relation 0.150"); zero terms left out."""
    return " · ".join(f"{k} {_fmt(float(v))}" for k, v in parts.items() if _num(v) and v != 0)


def candidate_rows(step: TraceStep, labels: Mapping[str, str]) -> tuple[list[str], list[list[str]]]:
    """(column names, rows) of the step's candidates: every node the step lists or scores, in the
    order the choice was made (the nodes' ``rank``) where the step records one, else best score
    first, ties by id (deterministic); rows without either follow, by label. Columns: the mark,
    the node, the deciding score, its rank (#) and terms (parts) where recorded, per-node numbers
    from the step's data, and the node's ``reason``."""
    roles, _ = vt._step_roles(step)  # the strongest role per node, as the graph draws it
    scores: dict[str, float] = {k: float(v) for k, v in step.scores.items() if _num(v)}
    for n in step.nodes:
        if n.score is not None and n.id not in scores and _num(n.score):
            scores[n.id] = float(n.score)
    rank = {n.id: n.rank for n in step.nodes if n.rank is not None}
    parts = {n.id: n.score_parts for n in step.nodes if n.score_parts}
    reason = {n.id: n.reason for n in step.nodes if n.reason}
    ids = list(dict.fromkeys([n.id for n in step.nodes] + list(scores)))
    if not ids:
        return [], []
    data = step.data or {}
    part_names = {k for p in parts.values() for k in p}
    extra = [k for k, v in data.items() if k not in part_names
             and isinstance(v, Mapping) and any(i in v and (_num(v[i]) or isinstance(v[i], (list, str))) for i in ids)]
    extra = extra[:MAX_EXTRA_COLUMNS]
    ids.sort(key=lambda i: (i not in rank, rank.get(i, 0), i not in scores, -scores.get(i, 0.0),
                            labels.get(i, i).lower() if i not in scores else "", i))
    columns = (["", "node", "score"] + (["#"] if rank else []) + (["parts"] if parts else [])
               + [DATA_COLUMNS.get(k, k) for k in extra] + (["reason"] if reason else []))
    table = {n.id: n.table for n in step.nodes}
    # a sub-chunk and its chunk carry the same label: when a step lists several kinds, each row names its own
    mixed = len({table[i] for i in ids if i in table}) > 1
    rows: list[list[str]] = []
    for i in ids[:MAX_ROWS]:
        name = labels.get(i) or i
        if mixed and i in table:
            name = f"{name} ({KIND_NAMES.get(table[i], table[i])})"
        row = [MARKS.get(roles.get(i, ""), roles.get(i, "")), name, f"{scores[i]:.3f}" if i in scores else ""]
        if rank:
            row.append(str(rank[i]) if i in rank else "")
        if parts:
            row.append(_parts_text(parts.get(i, {})))
        for k in extra:
            v = data[k].get(i)
            if isinstance(v, (list, tuple)) and len(v) > MAX_LIST_ENTRIES:
                v = [*v[:MAX_LIST_ENTRIES], f"+{len(v) - MAX_LIST_ENTRIES} more"]
            row.append("" if v is None else _fmt(v))
        if reason:
            row.append(reason.get(i, ""))
        rows.append(row)
    return columns, rows


def _facts(trace: Sequence[TraceStep], index: int) -> list[list[str]]:
    """Short key/value lines: activation round, frontier and edge direction (KG-Infused), hop strategy and λ
    (KG-Retriever), the stop reason, the answer budget."""
    step = trace[index]
    d = step.data or {}
    out: list[list[str]] = []
    info = vt.round_info(trace, index)
    if info is not None:
        out.append(["activation round", str(info.round)])
        out.append(["frontier size", "—" if info.frontier is None else str(info.frontier)])
    picked = d.get("picked")
    if isinstance(picked, Mapping):
        ranks = [int(r) for r in picked.get("ranks") or []]
        who = "the model" if picked.get("by") == "model" else "the offline chooser"
        took = ", ".join(f"#{r}" for r in ranks) or "none"
        first = ranks == list(range(1, len(ranks) + 1))
        out.append(["choice", f"{who} picked {took} of {picked.get('of')} ({picked.get('ranking', '')})"
                    + ("" if first or not ranks else "; its own score ranks the pick first (the # column)"
                       if picked.get("by") != "model" else "; a node it passed over says so")])
        if picked.get("listed_as") and picked.get("by") == "model":
            out.append(["as the model saw them", "listed as " + ", ".join(f"[{n}]" for n in picked["listed_as"])
                        + f" of {picked.get('of')}, in graph order, without scores"])
        if picked.get("words"):
            out.append(["the model's words", str(picked["words"])])
    for key, name in (("score_name", "score"), ("strategy", "document-layer strategy"),
                      ("direction", "edges followed"),
                      ("lambda", "λ (entity filter)"),
                      ("decision", "decision"), ("reason", "reason"), ("stop_reason", "stopped because"),
                      ("budget_tokens", "answer budget (tokens)"), ("used_tokens", "tokens used"),
                      ("expanded_query", "expanded query"), ("skeleton", "skeleton"), ("warning", "warning")):
        v = d.get(key)
        if key == "direction":
            v = DIRECTIONS.get(str(v), v) if v else v
        if v not in (None, "", [], {}) and not isinstance(v, Mapping):
            out.append([name, _fmt(v)])
    return out


def _llm(step: TraceStep) -> dict[str, str] | None:
    llm = step.llm
    if llm is None:
        return None
    line = f"task {llm.task} · prompt {llm.prompt_name} · mode: {vt.llm_mode_label(llm.mode, llm.heuristic)}"
    if llm.cached:
        line += " · from the cache"
    prompt = "\n\n".join(p for p in (llm.system, llm.prompt) if p)
    return {"line": line, "error": llm.error or "",
            "prompt": (prompt or "(offline: no prompt is sent; the heuristic named above ran instead)")[:_PROMPT_LIMIT],
            "raw": (llm.raw_output or "(empty)")[:_PROMPT_LIMIT]}


def _cost(step: TraceStep) -> str:
    u = step.usage
    return (f"{u.calls} LLM call(s) · {u.input_tokens:,} tokens in / {u.output_tokens:,} out · "
            f"${u.cost_usd:.4f} · step time {step.latency_s:.3f} s")


OURS_LABEL = "ours"  # the mark of a step that departs from the method's paper (TraceStep.ours)


def ours_mark(step: TraceStep) -> str:
    """The visible mark of a step that departs from its paper, with the reason ("" for a paper step)."""
    return f"{OURS_LABEL}: {step.ours}" if step.ours else ""


def step_panel(trace: Sequence[TraceStep], index: int, labels: Mapping[str, str], *,
               note: str = "") -> dict[str, Any]:
    """The panel of step ``index`` as plain data."""
    step = trace[index]
    columns, rows = candidate_rows(step, labels)
    why = ""
    if rows:
        # every role the rows hold, so the parts add up ("41 node(s): 29 chosen, 12 candidate")
        counts = [(sum(r[0] == mark for r in rows), "in context" if role == "context" else role)
                  for role, mark in MARKS.items()]
        parts = [f"{n} {name}" for n, name in counts if n]
        why = f"{len(rows)} node(s)" + (f": {', '.join(parts)}" if parts else "")
        if len(rows) == MAX_ROWS:
            why += f" (first {MAX_ROWS} shown)"
    raw = json.dumps(step.data, default=str, indent=1, ensure_ascii=False) if step.data else ""
    budgets = vt.channel_budgets(trace, index)
    return {
        "head": f"Step {index + 1} of {len(trace)} · {step.kind}",
        "title": step.title,
        "ours": ours_mark(step),
        "detail": step.detail,
        "note": note,
        "facts": _facts(trace, index),
        "bars": [{"label": b.label, "fraction": b.fraction} for b in budgets],
        "budget_total": vt.context_total(budgets),
        "why": why,
        "columns": columns,
        "rows": rows,
        "llm": _llm(step),
        "cost": _cost(step),
        "raw": raw[:_RAW_LIMIT],
    }
