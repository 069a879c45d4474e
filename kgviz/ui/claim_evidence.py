"""Compare page, claim -> evidence and human labels: click a claim (a radio of every judged claim)
to see what the judge cited for it, each cited passage with the quoted span marked (red for a
contradicting span), and to highlight those nodes on the evidence overlay; beside it, label the
run's answer (right / wrong), the claim's verdict (right / wrong) and context items (relevant /
irrelevant), each with a note, saved in the workspace (kgviz.evaluate.labels).

The evidence comes from kgviz.verify.evidence and is drawn by kgviz.viz.claim_evidence (escaped).
Widget keys start with ``kgviz_cmp_ev_``, buttons with ``kgviz_cmp_to_``.
"""
from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from kgviz import compare as cmp
from kgviz.evaluate import labels as lb
from kgviz.ui import resources
from kgviz.ui.render import md_text, plain
from kgviz.ui.state import AppContext
from kgviz.verify.evidence import ClaimEvidence, claim_evidence
from kgviz.viz.case_file import LABEL_TEXT
from kgviz.viz.claim_evidence import evidence_html

K = "kgviz_cmp_ev_"
K_CLAIM = K + "claim"  # the picked claim: "<result index>:<claim index>"
K_FOR = K + "for"  # the question the pick belongs to
K_BUTTON = "kgviz_cmp_to_"  # buttons (kgviz.ui.state.NOT_ASSIGNABLE: never re-assigned)
_VERDICTS = ("no verdict", "right", "wrong")
_RELEVANCE = ("no verdict", "relevant", "irrelevant")


def _options(comparison: cmp.Comparison, marks: list[lb.RunLabels] | None = None) -> dict[str, str]:
    """"<result>:<claim>" -> "method · verdict · claim", with the person's label on the verdict."""
    out = {}
    for n, r in enumerate(comparison.results):
        for i, c in enumerate(r.verdict.claims):
            mine = marks[n].claims.get(c.text) if marks else None
            said = f" · you: verdict {lb.verdict_text(mine.right)}" if mine is not None else ""
            out[f"{n}:{i}"] = f"{r.method} · {LABEL_TEXT.get(c.label, c.label)} · {c.text}{said}"
    return out


def _run_labels_line(comparison: cmp.Comparison, marks: list[lb.RunLabels]) -> str:
    said = []
    for r, m in zip(comparison.results, marks):
        parts = [f"answer {lb.verdict_text(m.run.right)}" + (f" ({m.run.note})" if m.run.note else "")] \
            if m.run is not None else []
        if m.items:
            parts.append(f"{sum(v.relevant is True for v in m.items.values())} context items relevant, "
                         f"{sum(v.relevant is False for v in m.items.values())} irrelevant")
        if parts:
            said.append(f"{r.method}: {', '.join(parts)}")
    return "Your labels: " + " · ".join(said) if said else ""


def pick_claim(ctx: AppContext, comparison: cmp.Comparison) -> ClaimEvidence | None:
    """The claim list to click; returns the picked claim's evidence (also drawn here) or None."""
    labels = lb.load_labels(ctx.db_dir)
    marks = cmp.run_labels(comparison, labels)
    options = _options(comparison, marks)
    st.subheader("Claim → evidence")
    line = _run_labels_line(comparison, marks)
    if line:  # the labels saved in the workspace for these very answers (Evaluate, here, earlier sessions)
        st.caption(md_text(line))
    if not options:
        st.caption("No method's answer has a judged claim.")
        return None
    if st.session_state.get(K_FOR) != comparison.question or st.session_state.get(K_CLAIM) not in options:
        st.session_state[K_FOR] = comparison.question
        st.session_state[K_CLAIM] = None
    picked = st.radio("Click a claim to see the evidence its verdict rests on", list(options), index=None,
                      key=K_CLAIM, format_func=lambda k: md_text(options.get(k, k)))
    if picked is None:
        st.caption("The passages the judge cited, with the sentence it quoted marked, appear here; the cited "
                   "nodes are highlighted on the evidence overlay below.")
        return None
    n, i = (int(x) for x in str(picked).split(":"))
    result = comparison.results[n]
    claim = result.verdict.claims[i]
    ev = claim_evidence(result.run, claim, resources.store(ctx))
    mine = marks[n]
    st.html(evidence_html(ev, {k: (v.relevant, v.note) for k, v in mine.items.items()}))
    _label_forms(ctx, result, claim.text, list(claim.evidence), mine)
    return ev


def _form(key: str, question: str, options: tuple[str, ...], current: bool | None, note: str,
          save: Callable[[bool | None, str], Any], for_what: str) -> None:
    """One verdict-and-note form; shows the saved label whenever it is drawn for another target."""
    if st.session_state.get(key + "_for") != for_what:
        st.session_state[key + "_for"] = for_what
        st.session_state[key] = options[{True: 1, False: 2}.get(current, 0)]  # type: ignore[arg-type]
        st.session_state[key + "_note"] = note
    c = st.columns([2, 3, 1], vertical_alignment="bottom")
    verdict = c[0].radio(question, options, horizontal=True, key=key)
    text = c[1].text_input("Note", key=key + "_note")
    if c[2].button("Save", key=K_BUTTON + key.removeprefix(K)):
        save({options[1]: True, options[2]: False}.get(str(verdict)), str(text))
        st.rerun()


def _label_forms(ctx: AppContext, result: cmp.MethodResult, claim: str, evidence: list[str],
                 mine: lb.RunLabels) -> None:
    folder = ctx.db_dir
    run_key = mine.key
    with st.expander(f"Your labels for {result.method}", expanded=True):
        run = mine.run
        _form(K + "run", "This answer is", _VERDICTS, run.right if run else None, run.note if run else "",
              lambda v, note: lb.save_label(folder, run_key, lb.RunLabel(v, note)), run_key)
        cl = mine.claims.get(claim)
        ck = lb.claim_key(run_key, claim)
        _form(K + "claim_label", "The judge's verdict on this claim is", _VERDICTS, cl.right if cl else None,
              cl.note if cl else "", lambda v, note: lb.save_claim_label(folder, ck, lb.ClaimLabel(v, note)), ck)
        # the answer step's items and the source text behind a method's notes (what the judge read)
        items = {i.id: i for i in [*result.run.context.items, *result.run.context.sources]}
        if not items:
            return
        cited = [e for e in evidence if e in items]  # the claim's cited items first
        order = cited + [i for i in items if i not in cited]
        if st.session_state.get(K + "item") not in order:  # another run's item: start at the first cited
            st.session_state[K + "item"] = order[0]
        item_id = st.selectbox("Context item", order, key=K + "item",
                               format_func=lambda i: plain(f"{items[i].kind} · {i} · {items[i].text[:80]}"))
        il = mine.items.get(str(item_id))
        ik = lb.item_key(run_key, str(item_id))
        _form(K + "item_label", "This context item is", _RELEVANCE, il.relevant if il else None,
              il.note if il else "", lambda v, note: lb.save_item_label(folder, ik, lb.ItemLabel(v, note)), ik)
