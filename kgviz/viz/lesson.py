"""A lesson: one self-contained HTML file that replays one or two runs for a class (no server, no
network: the player, vis-network, the steps, the panels and the algorithm boxes are all inlined),
in presentation mode. Two runs play side by side, stepped by one bar, on one shared layout: a
node sits at the same place in both graphs, so the eye can compare what each method touched.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from kgviz.graph.protocol import GraphStore
from kgviz.errors import ConfigError
from kgviz.methods import algorithm_lines
from kgviz.run import Run
from kgviz.viz import trace as vt
from kgviz.viz import trace_player as tp

LESSON_PARAMS = tp.PlayerParams(present=True)


def lesson_html(runs: Sequence[Run], store: GraphStore, params: tp.PlayerParams = LESSON_PARAMS, *,
                built: tuple[list[vt.Frame], dict[str, str]] | None = None) -> str:
    """The lesson page of ``runs`` (one or two runs of the same question). ``built``: one run's
    ``tp.run_frames`` (its own layout), when the caller holds it (the Trace page draws the same
    frames): a lesson of one run lays its frames out alone, so they are the page's, not made twice."""
    if not 1 <= len(runs) <= 2:
        raise ConfigError(f"a lesson shows one or two methods, not {len(runs)}")
    if len({r.question for r in runs}) > 1:
        raise ConfigError("the two runs of a lesson must answer the same question")
    if built is not None and len(runs) != 1:
        raise ConfigError("a lesson takes one run's frames only for a lesson of that one run")
    for r in runs:
        algorithm_lines.annotate(r.method, r.trace)  # a run saved before steps named their line
    if built is not None:
        frames, labels = built
        return _page(runs, [(frames, labels)], params)
    made = [tp.run_frames(r.trace, store, stable_layout=False) for r in runs]
    # one layout over both runs' frames: the same node at the same place in both graphs
    positions = vt.run_layout([f for frames, _labels in made for f in frames])
    return _page(runs, [([replace(f, positions=positions) for f in frames] if positions else frames, labels)
                        for frames, labels in made], params)


def _page(runs: Sequence[Run], built: Sequence[tuple[list[vt.Frame], dict[str, str]]], params: tp.PlayerParams) -> str:
    """The page of ``runs`` from their laid-out frames and labels."""
    data = [tp.player_data(frames, r.trace, labels, params, run=r.method, question=r.question)
            for r, (frames, labels) in zip(runs, built)]
    names = " vs ".join(r.method for r in runs)
    return tp.player_html(data if len(data) == 2 else data[0], params, title=f"kgviz lesson: {names}",
                          full_height=True)
