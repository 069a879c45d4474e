"""HTML for verdicts: the answer with its claims highlighted, and the exported case file.

Everything that came from documents, LLMs or the user goes through ``html.escape``. The case file
is one document with inline CSS and no external reference (the overlay graph, when included, is
the offline pyvis page inside an ``iframe srcdoc``), so it opens from disk without a network.
"""
from __future__ import annotations

from typing import Any, Sequence

from kgviz.graph.protocol import GraphStore
from kgviz.safe_text import safe_text
from kgviz.verify.comparison import Comparison, MethodResult, overlap_matrix
from kgviz.verify.judge import ClaimVerdict
from kgviz.verify.outcome import Outcome, judge_caution
from kgviz.viz.verdict_style import LABEL_COLOURS, LABEL_TEXT, esc

def highlight_answer(answer: str, claims: Sequence[ClaimVerdict]) -> str:
    """The answer with each located claim in a span coloured by its verdict. Claims that overlap
    an earlier one or were rephrased (no span) are left to the claim list."""
    out: list[str] = []
    pos = 0
    for c in sorted((c for c in claims if 0 <= c.start < c.end <= len(answer)), key=lambda c: c.start):
        if c.start < pos:
            continue
        out.append(esc(answer[pos: c.start]))
        colour = LABEL_COLOURS.get(c.label, "#e0e0e0")
        out.append(f'<span class="claim claim-{esc(c.label)}" style="background:{colour};padding:1px 3px;'
                   f'border-radius:3px" title="{esc(LABEL_TEXT.get(c.label, c.label))}">'
                   f"{esc(answer[c.start: c.end])}</span>")
        pos = c.end
    out.append(esc(answer[pos:]))
    return "".join(out)


def badge_html(outcome: Outcome) -> str:
    """The overall badge, then one labelled mark per fact ("correct", "grounded") in its own
    colour, so a grounded wrong answer reads as such and is never green."""
    # the marks stack under the badge (one line each): side by side they overflowed a third of the page
    marks = "".join(
        f'<div class="kgviz-mark mark-{esc(m.name)}" data-ok="{esc(m.ok)}" style="border-left:3px solid {m.colour};'
        f'color:{m.colour};padding:0 6px;margin:3px 0 0 0;font-size:12px;line-height:1.35">'
        f'<b>{esc(m.name)} {m.symbol}</b> {esc(m.text)}</div>' for m in outcome.marks)
    return (f'<span class="badge outcome-{esc(outcome.kind)}" style="display:inline-block;background:{outcome.colour};'
            f'color:#fff;padding:2px 8px;border-radius:10px;font-size:12px;white-space:nowrap">'
            f'{esc(outcome.label)}</span>{marks}')


_CSS = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 4px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.answer { font-size: 16px; padding: 6px; background: #fafafa; border: 1px solid #eee; }
.muted { color: #666; font-size: 12px; }
pre { white-space: pre-wrap; font-size: 12px; background: #f7f7f7; padding: 6px; margin: 0; }
details { margin: 6px 0; }
iframe { width: 100%; height: 620px; border: 1px solid #ddd; }
.claim-evidence { display: none; margin: 6px 0 12px 0; }
.claim-evidence:target { display: block; outline: 2px solid #1565c0; padding: 6px; }
mark.kgviz-span { padding: 0 2px; }
"""
# a clicked claim posts its cited nodes' page keys to the overlay frame (kgviz.viz.overlay listens);
# keys only ("n3"), never text from documents, cross into the frame
_CLAIM_JS = """<script>
document.addEventListener("click", function (e) {
  var a = e.target.closest ? e.target.closest("a.kgviz-claim-link") : null;
  var f = document.getElementById("kgviz-overlay");
  if (!a || !f || !f.contentWindow) return;
  var keys = (a.getAttribute("data-keys") || "").split(" ").filter(Boolean);
  f.contentWindow.postMessage({kgvizHighlight: keys}, "*");
});
</script>"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.0f}"


def summary_rows(c: Comparison) -> list[list[object]]:
    rows = []
    for r in c.results:
        u, m = r.run.usage, r.metrics
        o = r.outcome
        rows.append([r.method, r.run.answer or r.run.error, o.label,
                     _mark(o.correct), _mark(o.grounded), _pct(m.em if m else None), _pct(m.f1 if m else None),
                     r.funnel.label if r.funnel else "", len(r.run.context.items), r.run.context.n_tokens,
                     u.total_tokens, u.calls, f"{u.cost_usd:.4f}", f"{r.run.seconds:.2f}"])
    return rows


def _mark(mark: object) -> str:
    return "" if mark is None else f"{mark.symbol} {mark.text}"  # type: ignore[attr-defined]


SUMMARY_HEADERS = ["method", "answer", "verdict", "correct", "grounded", "EM %", "F1 %", "funnel", "context items",
                   "context tokens", "tokens", "calls", "$", "seconds"]


def _human(right: bool | None, note: str, yes: str = "right", no: str = "wrong") -> str:
    verdict = "no verdict" if right is None else (yes if right else no)
    return f"{verdict}" + (f" — {note}" if note else "")


def _claims_section(r: MethodResult, n: int, store: GraphStore | None, labels: Any, keys_of: Any) -> str:
    """The claims table (each claim a link: its evidence opens below and its cited nodes are
    selected in the overlay) and one hidden evidence block per claim (kgviz.viz.claim_evidence)."""
    from kgviz.verify.evidence import claim_evidence
    from kgviz.viz.claim_evidence import evidence_html

    v, run = r.verdict, r.run
    rows, blocks = [], []
    items = {i: (lab.relevant, lab.note) for i, lab in (labels.items.items() if labels else ())}
    for i, c in enumerate(v.claims, 1):
        ev = claim_evidence(run, c, store)
        anchor = f"ev-{n}-{i}"
        keys = " ".join(keys_of(ev.node_ids)) if keys_of else ""
        lab = labels.claims.get(c.text) if labels else None
        human = _human(lab.right, lab.note) if lab else ""
        rows.append(f'<tr><td>{i}</td><td><a class="kgviz-claim-link" href="#{anchor}" data-keys="{esc(keys)}">'
                    f'{esc(c.text)}</a></td><td>{esc(LABEL_TEXT.get(c.label, c.label))}</td>'
                    f'<td>{esc(", ".join(c.evidence))}</td><td>{esc(c.reason)}</td><td>{esc(human)}</td></tr>')
        blocks.append(f'<section class="claim-evidence" id="{anchor}">{evidence_html(ev, items)}</section>')
    head = "".join(f"<th>{h}</th>" for h in ("#", "claim (click: its evidence)", "verdict", "evidence", "reason",
                                            "your verdict on the judge"))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>" + "".join(blocks)


def _method_section(r: MethodResult, n: int = 0, store: GraphStore | None = None, labels: Any = None, keys_of: Any = None) -> str:
    v, run = r.verdict, r.run
    parts = [f"<h2>{esc(run.method)}</h2>", f"<div class='verdict'>{badge_html(r.outcome)}<div class='muted'>"
             f"{esc(v.judge)} · {esc(v.split)}</div></div>"]
    if run.error:
        parts.append(f"<p><b>Error:</b> {esc(run.error)}</p>")
    parts.append(f'<div class="answer">{highlight_answer(run.answer, v.claims) or "<i>(no answer)</i>"}</div>')
    if labels is not None and labels.run is not None:
        parts.append(f"<p class='human-label'><b>Your verdict on this answer:</b> "
                     f"{esc(_human(labels.run.right, labels.run.note))}</p>")
    if v.claims:
        parts.append(_claims_section(r, n, store, labels, keys_of))
    for e in v.errors:
        parts.append(f"<p class='muted'>{esc(e)}</p>")
    if r.funnel:
        f = r.funnel
        parts.append(_table(["in corpus", "in graph", "in context", "in kept context", "in answer", "failure"],
                            [[f.in_corpus, f.in_graph, f.in_context, f.in_kept_context, f.in_answer,
                              f"{f.label}: {f.explanation}"]]))
    # "ours" column: the reason a step departs from the method's paper (TraceStep.ours), empty for a paper step
    steps = [[s.index, s.kind, s.title, s.ours, s.detail] for s in run.trace]
    n_ours = sum(bool(s.ours) for s in run.trace)
    parts.append(f"<details><summary>Path: {len(steps)} trace steps, {n_ours} marked ours</summary>"
                 f"{_table(['#', 'kind', 'step', 'ours', 'detail'], steps)}</details>")
    marks = {} if labels is None else labels.items
    items = [[i.id, i.kind, i.source, i.text,
              _human(marks[i.id].relevant, marks[i.id].note, "relevant", "irrelevant") if i.id in marks else ""]
             for i in run.context.items]
    parts.append(f"<details><summary>Context: {len(items)} items, {run.context.n_tokens} tokens</summary>"
                 f"{_table(['id', 'kind', 'source', 'text', 'your label'], items)}</details>")
    return "\n".join(parts)


def render_case_file(c: Comparison, store: GraphStore | None = None, *, include_graph: bool = True,
                     labels: Sequence[Any] | None = None) -> str:
    """``labels``: per result, its kgviz.evaluate.labels.RunLabels (or None), shown beside the
    answer, its claims and its context items."""
    parts = [f"<h1>kgviz case file</h1><p><b>Question:</b> {esc(c.question)}</p>"]
    if c.golds:
        parts.append(f"<p><b>Gold answer(s):</b> {esc(' | '.join(c.golds))}</p>")
    parts.append(f"<p class='muted'>Mode: {esc(c.mode)} · judge: {esc(c.judge)}</p>")
    caution = judge_caution(c.judge)
    if caution:
        parts.append(f"<p class='judge-caution'><b>How far to trust the verdicts:</b> {esc(caution)}</p>")
    parts.append(f"<p class='muted'>{esc(c.definition)}</p>")
    s = c.summary()
    right = f"Right: {s['right']} of {s['methods'] - s['failed']} methods that ran; " if c.golds else ""
    parts.append(f"<p>{right}Hallucinated: {s['hallucinated']} of {s['methods'] - s['failed']} methods that ran; "
                 f"abstained: {s['abstained']}; failed: {s['failed']}.</p>")
    parts.append(_table(SUMMARY_HEADERS, summary_rows(c)))
    if c.overlap:
        methods, rows = overlap_matrix(c)
        parts.append("<h2>Evidence overlap</h2><p class='muted'>Jaccard index of the graph nodes each pair of "
                     "methods retrieved (shared nodes in brackets).</p>")
        parts.append(_table(["", *methods], rows))
    keys_of = None
    if include_graph:
        from kgviz.viz.overlay import build_overlay, node_keys, overlay_html

        ov = build_overlay([r.run for r in c.results], store, golds=c.golds)  # gold node marked
        keys_of = lambda ids: node_keys(ov, ids)  # noqa: E731
        parts.append(f'<h2>Evidence overlay</h2><p class="muted">Click a claim below: its evidence opens under '
                     f'it and the nodes the judge cited are selected here.</p><iframe id="kgviz-overlay" '
                     f'title="evidence overlay" sandbox="allow-scripts" srcdoc="{esc(overlay_html(ov, listen=True))}">'
                     f'</iframe>')
    per = list(labels) if labels is not None else [None] * len(c.results)
    parts.extend(_method_section(r, n, store, lab, keys_of) for n, (r, lab) in enumerate(zip(c.results, per)))
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>kgviz case file: "
            f"{esc(c.question[:80])}</title><style>{_CSS}</style></head><body>{body}{_CLAIM_JS}</body></html>")
