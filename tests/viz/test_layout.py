"""kgviz.viz.layout: a seeded force-directed layout that the Trace page computes once per run."""
from __future__ import annotations

import math

import numpy as np
import pytest

from kgviz.errors import KgvizError
from kgviz.viz.layout import canvas_size, force_layout


def _graph(n: int, m: int, seed: int = 1) -> tuple[list[str], list[tuple[str, str]]]:
    rng = np.random.default_rng(seed)
    ids = [f"n{i}" for i in range(n)]
    return ids, [(ids[int(a)], ids[int(b)]) for a, b in rng.integers(0, n, size=(m, 2))]


def test_same_input_same_positions_other_seed_other_positions() -> None:
    ids, edges = _graph(40, 60)
    a = force_layout(ids, edges, seed=3)
    assert a == force_layout(ids, edges, seed=3)
    assert a != force_layout(ids, edges, seed=4)
    assert list(a) == ids


@pytest.mark.parametrize("n", [2, 3, 25, 120])
def test_positions_stay_inside_the_box_and_are_finite(n: int) -> None:
    ids, edges = _graph(n, 2 * n)
    pos = force_layout(ids, edges, width=800, height=500, margin=20)
    xs, ys = np.array([p[0] for p in pos.values()]), np.array([p[1] for p in pos.values()])
    assert np.isfinite(xs).all() and np.isfinite(ys).all()
    assert xs.min() >= 20 and xs.max() <= 780 and ys.min() >= 20 and ys.max() <= 480
    # the layout uses the box: it is scaled to fill at least one of its sides
    assert xs.max() - xs.min() > 700 or ys.max() - ys.min() > 400


def test_edges_pull_their_ends_together() -> None:
    # two rings of 12 with no edge between them: ring neighbours end up closer than strangers
    ids = [f"a{i}" for i in range(12)] + [f"b{i}" for i in range(12)]
    edges = [(f"{r}{i}", f"{r}{(i + 1) % 12}") for r in "ab" for i in range(12)]
    pos = force_layout(ids, edges)

    def d(u: str, v: str) -> float:
        return math.dist(pos[u], pos[v])

    linked = np.mean([d(u, v) for u, v in edges])
    strangers = np.mean([d(f"a{i}", f"b{j}") for i in range(12) for j in range(12)])
    assert linked < 0.6 * strangers


def test_degenerate_inputs() -> None:
    assert force_layout([], []) == {}
    assert force_layout(["x"], [], width=100, height=60) == {"x": (50.0, 30.0)}
    # duplicates keep their first place; unknown ends and self-loops are ignored
    pos = force_layout(["a", "b", "a"], [("a", "zz"), ("b", "b"), ("a", "b")])
    assert list(pos) == ["a", "b"] and pos["a"] != pos["b"]
    with pytest.raises(KgvizError):
        force_layout(["a"], [], width=10, height=10, margin=6)


def test_sizes_push_overlapping_labels_apart() -> None:
    ids, edges = _graph(30, 80, seed=5)
    foot = {nid: (120.0, 30.0) for nid in ids}

    def overlaps(pos: dict[str, tuple[float, float]]) -> int:
        p = np.array(list(pos.values()))
        dx = np.abs(p[:, 0][:, None] - p[:, 0][None, :])
        dy = np.abs(p[:, 1][:, None] - p[:, 1][None, :])
        return int(((dx < 120) & (dy < 30)).sum() - len(p)) // 2

    w, h = canvas_size(30, footprint=30 * 120 * 30)
    plain = force_layout(ids, edges, width=w, height=h)
    spread = force_layout(ids, edges, width=w, height=h, sizes=foot)
    assert overlaps(plain) > 0
    assert overlaps(spread) < overlaps(plain) / 3
    assert all(0 <= x <= w and 0 <= y <= h for x, y in spread.values())


def test_canvas_grows_with_the_graph() -> None:
    assert canvas_size(5) == canvas_size(30) == pytest.approx((676.0, 520.0))
    w, h = canvas_size(120)
    assert w == pytest.approx(2 * 676.0) and h == pytest.approx(2 * 520.0)
    assert canvas_size(5, footprint=1e6)[0] > 676.0


def test_a_few_hundred_nodes_lay_out_inside_the_canvas() -> None:
    # its speed is a figure of benchmarks/layout.py, not an assertion here
    ids, edges = _graph(300, 450)
    foot = {nid: (100.0, 30.0) for nid in ids}
    pos = force_layout(ids, edges, width=2000, height=1500, sizes=foot)
    assert set(pos) == set(ids)
    assert all(0 <= x <= 2000 and 0 <= y <= 1500 for x, y in pos.values())
