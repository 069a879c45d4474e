"""A deterministic force-directed layout in numpy (no browser physics).

The Trace page draws one frame per step. Letting vis-network lay out every frame on its own moves
the nodes between steps, so the eye loses track of them. Instead the page lays out the union of
all frames once with ``force_layout`` and hands the same coordinates to every frame.

The algorithm is Fruchterman–Reingold (all-pairs repulsion k²/d, attraction d²/k along edges,
displacement capped by a linearly cooling temperature) plus a weak pull to the centre so that
disconnected pieces (a trace often touches several) stay near each other instead of drifting to
the border. The starting positions come from a seeded generator, so the same input always gives
the same picture.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np

from kgviz.errors import KgvizError

Position = tuple[float, float]

#: nodes one screen holds comfortably at the base canvas size; bigger graphs get a larger canvas
NODES_PER_SCREEN = 30
_MAX_STRETCH = 1.5  # most one axis is scaled more than the other when fitting the box (ours)
FILL = 1.8  # layout box area per unit of node+label footprint: room to move labels apart (ours)
_GRAVITY = 0.08  # pull to the centre, relative to the attraction of one edge (ours)
_GAP = 4.0  # extra push beyond the overlap, so touching labels end up apart (ours)
_MIN_DIST = 1e-3  # in units of k: keeps coincident nodes from producing infinite forces


def canvas_size(n_nodes: int, *, height: float = 520.0, aspect: float = 1.3,
                footprint: float = 0.0) -> tuple[float, float]:
    """A layout box (width, height) for ``n_nodes``: the base canvas (``aspect``·height ×
    height) grown by √(n / NODES_PER_SCREEN) once there are more nodes than one screen holds, and
    at least ``FILL`` times the summed ``footprint`` area (node + label) so labels fit side by
    side; nodes keep their spacing and the view zooms out instead."""
    base = aspect * height * height
    grow = max(1.0, math.sqrt(max(n_nodes, 0) / NODES_PER_SCREEN), math.sqrt(FILL * max(footprint, 0.0) / base))
    return aspect * height * grow, height * grow


def force_layout(
    nodes: Sequence[str],
    edges: Iterable[tuple[str, str]],
    *,
    width: float = 676.0,
    height: float = 520.0,
    margin: float = 0.0,
    seed: int = 7,
    iterations: int | None = None,
    sizes: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, Position]:
    """Positions for ``nodes`` inside [margin, width - margin] × [margin, height - margin].

    ``sizes`` (node id -> width, height of what is drawn there, label included, in the same
    units) turns on a last pass that pushes overlapping footprints apart, as far as the box
    allows: force layouts place points, but a reader needs the labels apart.

    Edges whose ends are not in ``nodes`` and self-loops are ignored; duplicate node ids keep
    their first place. The result depends only on the inputs (and their order), never on time
    or global random state. ``iterations`` defaults to fewer rounds for big graphs so that a
    few hundred nodes take well under a second.
    """
    if width <= 2 * margin or height <= 2 * margin:
        raise KgvizError(f"layout box {width}×{height} leaves no room inside a margin of {margin}")
    ids = list(dict.fromkeys(nodes))
    n = len(ids)
    if n == 0:
        return {}
    inner_w, inner_h = width - 2 * margin, height - 2 * margin
    if n == 1:
        return {ids[0]: (margin + inner_w / 2, margin + inner_h / 2)}
    pos = _fruchterman_reingold(n, _edge_index(ids, edges), inner_w / inner_h, seed,
                                iterations if iterations is not None else _default_iterations(n))
    placed = _fit(pos, margin, inner_w, inner_h)
    if sizes:
        foot = np.array([sizes.get(nid, (0.0, 0.0)) for nid in ids], dtype=float)
        placed = _separate(placed, foot, margin, margin + inner_w, margin + inner_h,
                           rounds=int(max(40, min(200, 12_000_000 // (n * n)))))
    if not np.isfinite(placed).all():
        raise KgvizError("the graph layout produced non-finite positions", hint="please report this graph")
    return {nid: (round(float(x), 2), round(float(y), 2)) for nid, (x, y) in zip(ids, placed)}


def _default_iterations(n: int) -> int:
    # all-pairs repulsion costs n² per round: fewer rounds for big graphs keep the time bounded
    return int(max(60, min(300, 30_000_000 // (n * n))))


def _edge_index(ids: list[str], edges: Iterable[tuple[str, str]]) -> np.ndarray:
    where = {nid: i for i, nid in enumerate(ids)}
    pairs = {tuple(sorted((where[a], where[b]))) for a, b in edges if a in where and b in where and a != b}
    if not pairs:
        return np.zeros((0, 2), dtype=np.int64)
    return np.array(sorted(pairs), dtype=np.int64)


def _fruchterman_reingold(n: int, edges: np.ndarray, aspect: float, seed: int, iterations: int) -> np.ndarray:
    """Positions (n × 2) in a box of area 1 with the given aspect ratio (width / height)."""
    rng = np.random.default_rng(seed)
    box = np.array([math.sqrt(aspect), 1.0 / math.sqrt(aspect)])
    pos = rng.random((n, 2)) * box
    k = math.sqrt(1.0 / n)  # ideal edge length for n nodes sharing unit area
    centre = box / 2
    temperature = 0.1 * float(box.max())
    cool = temperature / (iterations + 1)
    src, dst = (edges[:, 0], edges[:, 1]) if len(edges) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    x, y = pos[:, 0].copy(), pos[:, 1].copy()
    floor = (_MIN_DIST * k) ** 2
    for _ in range(iterations):
        dx = x[:, None] - x[None, :]
        dy = y[:, None] - y[None, :]
        inv = dx * dx
        inv += dy * dy
        np.maximum(inv, floor, out=inv)
        np.divide(k * k, inv, out=inv)
        np.fill_diagonal(inv, 0.0)  # no self-repulsion
        fx = np.einsum("ij,ij->i", dx, inv)
        fy = np.einsum("ij,ij->i", dy, inv)
        if len(src):
            ex, ey = x[src] - x[dst], y[src] - y[dst]
            pull = np.sqrt(ex * ex + ey * ey) / k
            ex *= pull
            ey *= pull
            fx -= np.bincount(src, ex, n) - np.bincount(dst, ex, n)
            fy -= np.bincount(src, ey, n) - np.bincount(dst, ey, n)
        cx, cy = centre[0] - x, centre[1] - y
        g = _GRAVITY * np.sqrt(cx * cx + cy * cy) / k
        fx += g * cx
        fy += g * cy
        length = np.maximum(np.sqrt(fx * fx + fy * fy), 1e-12)
        step = np.minimum(length, temperature) / length
        x += fx * step
        y += fy * step
        temperature -= cool
    pos = np.stack([x, y], axis=1)
    return pos


def _fit(pos: np.ndarray, margin: float, inner_w: float, inner_h: float) -> np.ndarray:
    """Scale into the box and centre there. An axis may stretch up to ``_MAX_STRETCH`` times the
    other, so a cloud that came out taller or wider than the canvas still uses the canvas."""
    low, high = pos.min(axis=0), pos.max(axis=0)
    span = np.maximum(high - low, 1e-9)
    fill = np.array([inner_w / span[0], inner_h / span[1]])
    scale = np.minimum(fill, fill.min() * _MAX_STRETCH)
    offset = np.array([margin + (inner_w - span[0] * scale[0]) / 2, margin + (inner_h - span[1] * scale[1]) / 2])
    placed = (pos - low) * scale + offset
    # clip away floating-point excursions of a hair beyond the box
    placed[:, 0] = np.clip(placed[:, 0], margin, margin + inner_w)
    placed[:, 1] = np.clip(placed[:, 1], margin, margin + inner_h)
    return placed


def _separate(pos: np.ndarray, foot: np.ndarray, low: float, high_x: float, high_y: float,
              rounds: int) -> np.ndarray:
    """Push apart footprints (rectangles centred on the nodes) that overlap, each pair along the
    axis where it overlaps least, half the overlap per round; positions stay in the box."""
    pos = pos.copy()
    n = len(pos)
    half = foot / 2
    # the earlier of two coincident nodes moves left/up: a fixed rule keeps the result repeatable
    tie = np.where(np.arange(n)[:, None] < np.arange(n)[None, :], -1.0, 1.0)
    for _ in range(rounds):
        dx = pos[:, 0][:, None] - pos[:, 0][None, :]
        dy = pos[:, 1][:, None] - pos[:, 1][None, :]
        ox = half[:, 0][:, None] + half[:, 0][None, :] - np.abs(dx)
        oy = half[:, 1][:, None] + half[:, 1][None, :] - np.abs(dy)
        hit = (ox > 0) & (oy > 0)
        np.fill_diagonal(hit, False)
        if not hit.any():
            break
        along_x = hit & (ox <= oy)
        along_y = hit & (ox > oy)
        sx = np.where(dx != 0, np.sign(dx), tie)
        sy = np.where(dy != 0, np.sign(dy), tie)
        move = 0.5 * np.stack([(along_x * sx * (ox + _GAP)).sum(axis=1), (along_y * sy * (oy + _GAP)).sum(axis=1)],
                              axis=1)
        # a node caught in many overlaps moves at most its own size per round: no overshoot
        np.clip(move, -foot, foot, out=move)
        pos += move
        pos[:, 0] = np.clip(pos[:, 0], low, high_x)
        pos[:, 1] = np.clip(pos[:, 1], low, high_y)
    return pos
