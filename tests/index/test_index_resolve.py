"""Entity resolution rules and the assembly of graph rows (pure parts)."""
from __future__ import annotations

import gc
import weakref
from collections import Counter

import pytest

from kgviz.index.assemble import assemble, finalise
from kgviz.facts.parse import parse_triples
from kgviz.index.resolve import (
    best_sentence,
    display_name,
    document_aliases,
    merge_descriptions,
    normalise_key,
)
from kgviz.types import Chunk


@pytest.mark.parametrize(
    ("surface", "key"),
    [
        ("The Orrin Bridge", "orrin bridge"),
        ("orrin   bridge", "orrin bridge"),
        ("Orrin Bridge's", "orrin bridge"),
        ("“Orrin Bridge”", "orrin bridge"),
        ("Dr. Mira Tesk", "mira tesk"),
        ("U.S.", "us"),
        ("12,300", "12300"),
        ("Tesk & Sons", "tesk and sons"),
        ("Saint-Exupéry", "saint exupéry"),
        ("...", ""),
    ],
)
def test_normalise_key(surface: str, key: str) -> None:
    assert normalise_key(surface) == key


def test_display_name_keeps_title_the() -> None:
    assert display_name("the Institute") == "Institute"
    assert display_name('"The Salt Road"') == "The Salt Road"
    assert display_name("Tesk's") == "Tesk"


def forms(**keys: list[str]) -> dict[str, Counter[str]]:
    return {k.replace("_", " "): Counter(v) for k, v in keys.items()}


def test_surname_alias_only_when_unique() -> None:
    aliases = document_aliases(forms(edda_lunn=["Edda Lunn"], lunn=["Lunn", "Lunn"], marrec=["Marrec"],
                                     tobias_marrec=["Tobias Marrec"], selma_marrec=["Selma Marrec"]))
    assert aliases == {"lunn": "edda lunn"}  # two Marrecs: no merge


def test_surname_alias_never_joins_places_or_first_words() -> None:
    aliases = document_aliases(forms(kellhaven=["Kellhaven"], kellhaven_courier=["Kellhaven Courier"],
                                     ossel=["Ossel"], river_ossel=["River Ossel"], mira=["Mira"], mira_tesk=["Mira Tesk"]))
    assert aliases == {}


def test_head_noun_and_acronym_aliases() -> None:
    aliases = document_aliases(forms(institute=["the Institute"], ossel_marine_institute=["Ossel Marine Institute"],
                                     omi=["OMI"], university=["the university"]))
    assert aliases == {"institute": "ossel marine institute", "omi": "ossel marine institute"}
    two = document_aliases(forms(institute=["Institute"], a_institute=["Alder Institute"], b_institute=["Birch Institute"]))
    assert two == {}
    lowercase = document_aliases(forms(province=["province"], coastal_province=["coastal province"]))
    assert lowercase == {}  # attributes are not names


def test_descriptions_and_best_sentence() -> None:
    old = "Lunn was born in Kellhaven. She studied at Kellhaven University."
    new = ["She studied at Kellhaven University.", "Lunn died in 1940."]
    assert merge_descriptions(old, new, 3) == f"{old} Lunn died in 1940."
    assert merge_descriptions(old, new, 2) == old
    sents = ["Mira Tesk was born in Aldport.", "Tesk founded Tesk Works in 1921."]
    assert best_sentence("Mira Tesk founded Tesk Works", sents) == sents[1]


def _chunk(doc: str, n: int, text: str) -> Chunk:
    return Chunk(id=f"{doc}#c{n}", doc_id=doc, ord=n, text=text, n_tokens=len(text.split()))


def test_assemble_merges_aliases_dedups_overlap_and_keeps_provenance() -> None:
    c0 = _chunk("doc:a", 0, "Edda Lunn was born in Kellhaven. Lunn designed the Orrin Bridge.")
    c1 = _chunk("doc:a", 1, "Lunn designed the Orrin Bridge. Lunn died in Kellhaven.")  # overlap repeats a sentence
    c2 = _chunk("doc:b", 0, "The Orrin Bridge crosses the River Ossel.")
    outputs = {
        c0.id: parse_triples("(Edda Lunn; was born in; Kellhaven)\n(Lunn; designed; Orrin Bridge)"),
        c1.id: parse_triples("(Lunn; designed; the Orrin Bridge)\n(Lunn; died in; Kellhaven)"),
        c2.id: parse_triples("(The Orrin Bridge; crosses; River Ossel)\n((Orrin Bridge; crosses; River Ossel); since; 1903)"),
    }
    acc = assemble([("doc:a", [c0, c1]), ("doc:b", [c2])], outputs)
    finalise(acc, {})
    lunn = acc.entities["ent:edda lunn"]
    assert lunn.name == "Edda Lunn" and set(lunn.surface_forms) == {"Edda Lunn", "Lunn"}
    assert lunn.chunks == [c0.id, c1.id]  # first seen first, each once
    designed = [t for t in acc.triples.values() if t.relation == "designed"]
    assert len(designed) == 1  # one node per fact per document ...
    assert {c for (t, c) in acc.from_chunk if t == designed[0].id} == {c0.id, c1.id}  # ... stated by two chunks
    assert designed[0].sentence == "Lunn designed the Orrin Bridge." and designed[0].text == "Edda Lunn designed Orrin Bridge"
    bridge = acc.entities["ent:orrin bridge"]
    assert bridge.chunks == [c0.id, c1.id, c2.id]  # one entity across documents
    hyper = next(t for t in acc.triples.values() if t.subject_is_triple)
    assert hyper.subject == "(Orrin Bridge; crosses; River Ossel)" and hyper.doc_id == "doc:b"
    assert hyper.subject_id in acc.triples and hyper.object_id == "ent:1903"
    assert ("Edda Lunn", ["Lunn"], 4) in acc.merges()  # 1 full name + 3 surname mentions
    related = list(acc.related_rows())
    assert all(not r["from"].startswith("tri:") for r in related) and len(related) == 4


def test_finalise_leaves_no_cycle_holding_the_rows() -> None:
    """After finalise (nested facts included), dropping the last reference frees the rows at once,
    the cyclic garbage collector off (issue 29: a recursive closure over them kept them)."""
    c0 = _chunk("doc:b", 0, "The Orrin Bridge crosses the River Ossel.")
    outputs = {c0.id: parse_triples("(Orrin Bridge; crosses; River Ossel)\n((Orrin Bridge; crosses; River Ossel); since; 1903)")}
    enabled = gc.isenabled()
    gc.disable()
    try:
        acc = assemble([("doc:b", [c0])], outputs)
        finalise(acc, {})
        assert any(t.subject_is_triple and t.subject == "(Orrin Bridge; crosses; River Ossel)" for t in acc.triples.values())
        ref = weakref.ref(acc)
        del acc
        assert ref() is None
    finally:
        if enabled:
            gc.enable()


def test_assemble_drops_empty_names_and_self_loops() -> None:
    c = _chunk("doc:a", 0, "Edda Lunn married Lunn.")
    parsed = parse_triples("(Edda Lunn; married; Lunn)\n(--; is; x)\n(Edda Lunn; is a; engineer)")
    assert parsed.n_malformed == 1  # issue 15: the parser now rejects a name with no word in it
    acc = assemble([("doc:a", [c])], {c.id: parsed})
    assert acc.n_dropped == 1 and len(acc.triples) == 1  # the self-loop


def test_remembered_keys_and_display_names_are_the_computed_ones() -> None:
    """normalise_key and display_name are remembered per text (issue 29); a remembered answer is
    what the rules compute, asked first or again."""
    from kgviz.index import resolve

    forms = ["The Orrin Bridge's", "U.S.", "Dr. Ada Lovelace", "  the   Institute ", "Smith & Sons", "“Hello”", "a"]
    resolve.normalise_key.cache_clear()
    resolve.display_name.cache_clear()
    for _ in range(2):
        assert [resolve.normalise_key(f) for f in forms] == [resolve.normalise_key.__wrapped__(f) for f in forms]
        assert [resolve.display_name(f) for f in forms] == [resolve.display_name.__wrapped__(f) for f in forms]
    assert resolve.normalise_key.cache_info().hits == len(forms)
    assert resolve.normalise_key("The Orrin Bridge's") == "orrin bridge"


def test_entity_name_is_computed_once_until_a_surface_form_is_added(monkeypatch: pytest.MonkeyPatch) -> None:
    """EntityAgg.name is remembered (issue 29: asked per fact end, per text to embed and per row
    written) and forgotten when a mention adds a surface form, so it is always the rule-3 name."""
    from kgviz.index import resolve

    calls: list[str] = []
    computed = resolve.display_name.__wrapped__

    def counted(text: str) -> str:
        calls.append(text)
        return computed(text)

    monkeypatch.setattr(resolve, "display_name", counted)
    agg = resolve.EntityAgg("ent:orrin bridge", "orrin bridge")
    agg.add("the Orrin Bridge", "orrin bridge", "place", "s1", "c1")
    assert [agg.name for _ in range(5)] == ["Orrin Bridge"] * 5
    assert calls == ["the Orrin Bridge"]  # once, not once per ask
    # two mentions of another form outnumber the first: the name follows
    agg.add("Orrin bridge", "orrin bridge", "place", "s2", "c2")
    agg.add("Orrin bridge", "orrin bridge", "place", "s3", "c2")
    assert agg.name == "Orrin bridge" and agg.name == "Orrin bridge"
    assert len(calls) == 2
    # an alias form never outranks the entity's own forms, but still invalidates (the pool may change)
    alias = resolve.EntityAgg("ent:lunn", "lunn")
    alias.add("Lunn", "edda lunn", "", "", "c1")
    assert alias.name == "Lunn"
    alias.add("lunn", "lunn", "", "", "c1")
    assert alias.name == "lunn"  # its own form now: the alias pool is no longer read
