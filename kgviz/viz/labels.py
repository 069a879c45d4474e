"""Human labels for graph nodes (pure, no streamlit): a reader on a projector should see
"Tidewell Line: The Tidewell Line is a shipping…", not ``doc:fc4ba24fcbd50598#c0``.

A document is labelled by its title; a title that is only a file stem (``kellhaven_university``)
gives way to the document's first markdown heading, else to the stem with its separators turned
into spaces. A chunk (or sub-chunk) is labelled by its document's title and its first words. Ids
stay available in tooltips and raw data; nothing here is escaped (the renderers escape).

Both read through ``kgviz.graph.memory_explore``: ``fetch_human_labels`` the documents and
chunks by primary-key lookups (the rows of the ``kgviz.graph.reads`` statements of the same name,
whose id lists scanned the tables: up to 0.2-0.4 s a run at 100,000 passages; a list longer than
``LABEL_LOOKUPS_MAX`` ids is still read by its statement), ``fetch_links`` the facts from the
graph held in memory (as statements 2-3 s a run at 100,000 passages).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from kgviz.graph import memory_explore
from kgviz.graph.protocol import GraphStore

FIRST_WORDS = 4  # words of a chunk's text after its document title (ours: fits one label line)
_STEM = re.compile(r"^[\w.-]+$")  # no spaces: a file stem or an id, not a title a person wrote
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_EXT = re.compile(r"\.(?:md|txt|pdf|markdown|jsonl?)$", re.I)


def human_title(title: str, text: str = "") -> str:
    """The document's title as a person would write it."""
    title = " ".join((title or "").split())
    if title and not _STEM.match(title):
        return title
    heading = _HEADING.search(text[:2000]) if text else None
    if heading:
        return " ".join(heading.group(1).split())
    stem = _EXT.sub("", title)
    words = [w for w in re.split(r"[_\-.]+", stem) if w]
    if not words:
        return title or "(untitled)"
    return " ".join(w if any(c.isupper() for c in w) else w.capitalize() for w in words)


def first_words(text: str, n: int = FIRST_WORDS, *, title: str = "") -> str:
    """The first ``n`` words of ``text``, with "…" when cut. A leading markdown heading, or a
    leading copy of ``title`` followed by a new capitalised sentence (a sub-chunk keeps the
    heading's words without its "#"), is dropped: the label already starts with the title."""
    body = _HEADING.sub("", text, count=1) if _HEADING.match(text or "") else (text or "")
    words = body.split()
    head = title.split()
    if (head and len(words) > len(head) and [w.lower() for w in words[: len(head)]] == [w.lower() for w in head]
            and words[len(head)][:1].isupper()):  # "Tidewell Line The Tidewell…", not "Kellhaven is…"
        words = words[len(head):]
    return " ".join(words[:n]) + ("…" if len(words) > n else "")


def chunk_label(doc_title: str, text: str, n: int = FIRST_WORDS) -> str:
    """"Document title: first words of the chunk…"."""
    words = first_words(text, n, title=doc_title)
    return f"{doc_title}: {words}" if words else doc_title


def _doc_of(node_id: str) -> str:
    return node_id.split("#", 1)[0]


def fetch_human_labels(store: GraphStore, ids: Iterable[str]) -> dict[str, str]:
    """Human labels for the Document, Chunk and SubChunk ids among ``ids`` (others are left
    out: entities and facts already carry readable names)."""
    wanted = sorted({i for i in ids if isinstance(i, str) and i.startswith("doc:")})
    if not wanted:
        return {}
    docs = sorted({_doc_of(i) for i in wanted})
    titles: dict[str, str] = {}
    for r in memory_explore.documents_for_labels(store, docs):
        titles[str(r["id"])] = human_title(str(r.get("title") or ""), str(r.get("text") or ""))
    out: dict[str, str] = {d: t for d, t in titles.items() if d in wanted}
    chunks = [i for i in wanted if "#" in i and ".s" not in i.rsplit("#", 1)[1]]
    subs = [i for i in wanted if "#" in i and ".s" in i.rsplit("#", 1)[1]]
    for table, part in (("Chunk", chunks), ("SubChunk", subs)):
        if not part:
            continue
        for cid, text in memory_explore.chunk_label_texts(store, table, part).items():
            title = titles.get(_doc_of(cid), _doc_of(cid))
            out[cid] = chunk_label(title, str(text or ""))
    return out


# --- facts' subject/object links (the Trace graph ties each fact to its two ends) ---------------
@dataclass(frozen=True)
class TraceLinks:
    links: dict[str, tuple[str, str]]  # triple id -> (subject id, object id)
    labels: dict[str, tuple[str, str]]  # end id -> (label, table)


def fetch_links(store: GraphStore, ids: list[str]) -> TraceLinks:
    """Subject and object of the facts ``ids`` with their labels, in two reads: the facts, then
    which of their ends are facts themselves (a hypernode) rather than entities."""
    if not ids:
        return TraceLinks({}, {})
    links: dict[str, tuple[str, str]] = {}
    labels: dict[str, tuple[str, str]] = {}
    order = {tid: n for n, tid in reversed(list(enumerate(ids)))}
    # in the order of ``ids`` (the IN form returns rows in scan order), so the drawing repeats
    for r in sorted(memory_explore.triple_links(store, list(ids)), key=lambda r: (order.get(r["id"], len(order)), r["id"])):
        s, o = str(r.get("s") or ""), str(r.get("o") or "")
        links[str(r["id"])] = (s, o)
        for end, name in ((s, r.get("s_name")), (o, r.get("o_name"))):
            if end:
                labels[end] = (str(name or end), "Entity")
    if labels:
        for tid, text in memory_explore.triple_labels(store, sorted(labels)).items():
            labels[str(tid)] = (str(text or labels[str(tid)][0]), "Triple")
    return TraceLinks(links, labels)
