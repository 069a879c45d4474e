from __future__ import annotations

import pytest

from kgviz.ingest import strip_markdown
from kgviz.text import normalize_text


def md(text: str) -> str:
    return normalize_text(strip_markdown(text))


@pytest.mark.parametrize(
    "source, expected",
    [
        ("# Title", "Title"),
        ("### Deep heading ###", "Deep heading"),
        ("#hashtag is not a heading", "#hashtag is not a heading"),
        ("**bold** and __strong__", "bold and strong"),
        ("*em* and _em_ and ***both***", "em and em and both"),
        ("snake_case_name and __init__ stay", "snake_case_name and init stay"),
        ("2 * 3 * 4 = 24", "2 * 3 * 4 = 24"),
        ("~~old~~ new", "old new"),
        ("see [the docs](https://x.org/a_(b)) now", "see the docs now"),
        ("![a cat](cat.png) sat", "a cat sat"),
        ("[ref link][1] here", "ref link here"),
        ("visit <https://example.com/x>", "visit https://example.com/x"),
        ("a <b>bold</b> <!-- note --> word", "a bold word"),
        (r"literal \*stars\* and \_under\_", "literal *stars* and _under_"),
        ("use `a*b*c` and `x_y_`", "use a*b*c and x_y_"),
        ("> quoted\n> > nested", "quoted\nnested"),
        ("- one\n* two\n+ three\n- [x] done", "one\ntwo\nthree\ndone"),
        ("1. first\n2. second", "1. first\n2. second"),
        ("above\n\n---\n\nbelow", "above\n\nbelow"),
        ("Setext\n======\ntext", "Setext\n\ntext"),
        ("[1]: https://x.org\nbody", "body"),
        ("---\ntitle: front\n---\nBody text.", "Body text."),
        ("| a | b |\n|---|:--:|\n| 1 | 2 |", "| a | b |\n\n| 1 | 2 |"),
    ],
)
def test_strip_markdown(source: str, expected: str) -> None:
    assert md(source) == expected


def test_code_fences_keep_their_text_verbatim() -> None:
    source = (
        "Intro.\n```python\nx = a*b  # **not bold** [k](v)\n```\n"
        "After.\n~~~\n# not a heading\n~~~"
    )
    assert md(source) == "Intro.\n\nx = a*b  # **not bold** [k](v)\n\nAfter.\n\n# not a heading"


def test_unclosed_fence_keeps_the_rest() -> None:
    assert md("```\ncode *here*\nmore") == "code *here*\nmore"


def test_heading_becomes_its_own_paragraph() -> None:
    from kgviz.text import split_sentences

    assert split_sentences(md("# Results\nThe model wins.")) == ["Results", "The model wins."]
