"""How the extraction prompt shows a chunk to the model."""
from kgviz.prompts.extraction import chunk_text_for_prompt, render_extract_triples


def test_heading_stays_on_its_own_line():
    text = "# Kellhaven\n\nKellhaven   was founded\tin 1801.\n\n\n\nIt lies on the coast."
    shown = chunk_text_for_prompt(text)
    assert shown == "# Kellhaven\n\nKellhaven was founded in 1801.\n\nIt lies on the coast."
    assert "# Kellhaven\n\nKellhaven was founded" in render_extract_triples(text)


def test_windows_line_breaks_and_edges_are_normalised():
    assert chunk_text_for_prompt("  A line.\r\nB line.  \r\n") == "A line.\nB line."


def test_braces_in_text_are_harmless():
    assert "{not a placeholder}" in render_extract_triples("X {not a placeholder} Y.")
