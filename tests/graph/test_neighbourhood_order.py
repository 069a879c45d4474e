"""neighbourhood.sort_key: Kùzu's order of a row (per column NULL last, then the string's UTF-8
bytes), compared on strings that order differently by bytes and by naive expectations."""
from __future__ import annotations

import itertools
import random

from kgviz.graph import neighbourhood as nb

VALUES = [None, "", "a", "B", "b", "é", "e\u0301", "z", "Ω", "ω", "\u00ff", "\u0100", "\uffef", "😀", "a😀", "ab",
          "t1", "t10", "t2"]


def bytewise(row: dict, cols: tuple[str, ...]) -> tuple:
    """The order the key stands for, spelled out as Kùzu sorts: NULL last, then UTF-8 bytes."""
    return tuple((row[c] is None, (row[c] or "").encode("utf-8")) for c in cols)


def test_sort_key_orders_rows_as_kuzu_does_by_bytes_with_null_last() -> None:
    rng = random.Random(7)
    for cols in (("id", "side"), ("id", "inner", "side"), ("dst", "relation", "triple_id")):
        rows = [dict(zip(cols, combo)) for combo in itertools.product(VALUES, repeat=len(cols))]
        rows = rng.sample(rows, min(len(rows), 3000))
        got = sorted(rows, key=lambda r: nb.sort_key(r, cols))
        want = sorted(rows, key=lambda r: bytewise(r, cols))
        assert got == want
        for a, b in zip(rows, rows[1:]):  # equal keys exactly when the rows are equal on cols
            assert (nb.sort_key(a, cols) == nb.sort_key(b, cols)) == (bytewise(a, cols) == bytewise(b, cols))
