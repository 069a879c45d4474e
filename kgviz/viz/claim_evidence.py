"""HTML for one claim's evidence (kgviz.verify.evidence): each cited item's source passage with
the span the judge quoted marked (the supporting sentence, or for a contradicted claim the
contradicting one, in red) and its decisive words in bold; human labels beside the items.

Every text from documents, LLMs or the user is escaped (kgviz.viz.case_file.esc). Used by the
Compare page and the case file, so both show the same thing.
"""
from __future__ import annotations

from typing import Mapping

from kgviz.verify.evidence import CitedItem, ClaimEvidence
from kgviz.viz.verdict_style import LABEL_COLOURS, LABEL_TEXT, esc

SPAN_COLOURS = {"contradicted": "#ef9a9a", "supported": "#fff59d"}  # marked span fill
SPAN_TEXT = {"contradicted": "contradicting span", "supported": "supporting span"}


def span_name(label: str) -> str:
    return SPAN_TEXT.get(label, "quoted span")


def passage_html(item: CitedItem, label: str) -> str:
    """The passage with the quoted span in a <mark> and the decisive words in <b>."""
    text = item.passage
    if item.span is None:
        return esc(text)
    a, b = item.span
    inner, pos = [], a
    for wa, wb in item.words:
        inner.append(esc(text[pos:wa]))
        inner.append(f'<b class="kgviz-word">{esc(text[wa:wb])}</b>')
        pos = wb
    inner.append(esc(text[pos:b]))
    colour = SPAN_COLOURS.get(label, "#fff59d")
    return (f"{esc(text[:a])}<mark class=\"kgviz-span span-{esc(label)}\" title=\"{esc(span_name(label))}\" "
            f"style=\"background:{colour};padding:0 2px\">{''.join(inner)}</mark>{esc(text[b:])}")


def evidence_html(ev: ClaimEvidence, item_labels: Mapping[str, tuple[bool | None, str]] | None = None) -> str:
    """``item_labels``: item id -> (relevant, note) of the person's labels, shown beside the item."""
    colour = LABEL_COLOURS.get(ev.label, "#e0e0e0")
    parts = [f'<div class="kgviz-evidence" data-label="{esc(ev.label)}" data-nodes="{esc(" ".join(ev.node_ids))}">',
             f'<div><span style="background:{colour};padding:1px 7px;border-radius:9px;font-size:12px">'
             f'{esc(LABEL_TEXT.get(ev.label, ev.label))}</span> <b>{esc(ev.method)}</b>: {esc(ev.claim)}</div>']
    if ev.reason:
        parts.append(f'<div style="color:#666;font-size:12px">judge: {esc(ev.reason)}</div>')
    if not ev.items and not ev.missing:
        parts.append('<p class="kgviz-no-evidence" style="font-size:13px">The judge cited no context item '
                     'for this claim.</p>')
    elif not ev.quote:
        parts.append('<p style="font-size:12px;color:#666">The judge quoted no sentence: the items it cited are '
                     'shown whole, nothing is marked.</p>')
    elif not ev.quoted_found:
        parts.append(f'<p style="font-size:12px;color:#666">The quoted sentence was not found in the cited '
                     f'passages: "{esc(ev.quote)}"</p>')
    for item in ev.items:
        lab = (item_labels or {}).get(item.id)
        mark = ""
        if lab is not None:
            verdict = "no verdict" if lab[0] is None else ("relevant" if lab[0] else "irrelevant")
            mark = f' · <span class="kgviz-item-label">you: {esc(verdict)}{" — " + esc(lab[1]) if lab[1] else ""}</span>'
        where = "" if item.passage_id == item.id else f" · passage: {esc(item.passage_id)}"
        span = f" · {esc(span_name(ev.label))} marked" if item.span else ""
        parts.append(
            f'<div class="kgviz-cited" data-id="{esc(item.id)}" style="border-left:3px solid {colour};'
            f'padding:2px 8px;margin:6px 0">'
            f'<div style="font-size:12px;color:#555">{esc(item.kind)} <code>{esc(item.id)}</code>{where}{span}{mark}</div>'
            + (f'<div style="font-size:12px;color:#555">item: {esc(item.text)}</div>' if item.passage_id != item.id else "")
            + f'<div class="kgviz-passage" style="font-size:13px;white-space:pre-wrap">{passage_html(item, ev.label)}</div>'
            + "</div>")
    if ev.missing:
        parts.append(f'<p style="font-size:12px;color:#a00">cited but not in this run\'s context: '
                     f'{esc(", ".join(ev.missing))}</p>')
    parts.append("</div>")
    return "".join(parts)
