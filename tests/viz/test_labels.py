"""Human labels: titles instead of file stems, chunk = title + first words, ids never shown."""
from __future__ import annotations

from typing import Any, Mapping

from kgviz.viz.labels import chunk_label, fetch_human_labels, first_words, human_title


def test_human_title_prefers_a_written_title_then_the_heading_then_the_stem() -> None:
    assert human_title("The Orrin Bridge", "# Other") == "The Orrin Bridge"
    assert human_title("tidewell_line", "# Tidewell Line\n\nThe Tidewell Line is…") == "Tidewell Line"
    assert human_title("kellhaven_university", "Kellhaven University is a public university.") == \
        "Kellhaven University"
    assert human_title("tarrow.txt") == "Tarrow"
    assert human_title("") == "(untitled)"


def test_first_words_drop_the_heading_and_a_repeated_title() -> None:
    assert first_words("# Tidewell Line\n\nThe Tidewell Line is a shipping company.", 4) == "The Tidewell Line is…"
    assert first_words("Tidewell Line The Tidewell Line is a company", 3, title="Tidewell Line") == "The Tidewell Line…"
    # a sentence that starts with the title keeps it
    assert first_words("Kellhaven is the capital", 4, title="Kellhaven") == "Kellhaven is the capital"
    assert chunk_label("Tarrow", "Tarrow is a market town in Lessary.") == "Tarrow: Tarrow is a market…"


class _FakeStore:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def query(self, cypher: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        self.calls.append((cypher, dict(params)))
        wanted = params["id"]  # one primary-key lookup per id
        if "Document" in cypher:
            rows = [{"id": "doc:1", "title": "tidewell_line", "text": "# Tidewell Line\n\nThe line."}]
        elif "SubChunk" in cypher:
            rows = [{"id": "doc:1#c0.s1", "text": "Tobias Marrec founded it in 1898 with two steamers."}]
        else:
            rows = [{"id": "doc:1#c0", "text": "# Tidewell Line\n\nThe Tidewell Line is a shipping company."}]
        return [r for r in rows if r["id"] == wanted]


def test_fetch_human_labels_uses_params_and_labels_every_layer() -> None:
    store = _FakeStore()
    got = fetch_human_labels(store, ["doc:1", "doc:1#c0", "doc:1#c0.s1", "ent:x", "tri:y"])
    assert got == {"doc:1": "Tidewell Line", "doc:1#c0": "Tidewell Line: The Tidewell Line is…",
                   "doc:1#c0.s1": "Tidewell Line: Tobias Marrec founded it…"}
    assert store.calls and all("{id: $id}" in c and "doc:" not in c for c, _p in store.calls)  # bound, never spliced
    assert fetch_human_labels(store, ["ent:x"]) == {}
