"""One colour per method everywhere, whatever subset a page shows; rate axes keep 0 and 100 % in view."""
from __future__ import annotations

from kgviz.methods.registry import list_methods
from kgviz.viz.overlay import method_colours as overlay_colours
from kgviz.viz.palette import method_colour, method_colours


def test_colour_depends_on_the_method_not_the_selection() -> None:
    methods = list_methods()
    full = method_colours(methods)
    assert len(set(full.values())) == len(methods)  # every registered method has its own colour
    subset = method_colours(list(reversed(methods[2:5])))
    assert all(subset[m] == full[m] for m in subset)
    assert overlay_colours(["ket-rag", "kg-rag"])["kg-rag"] == full["kg-rag"]
    assert method_colour("not-a-method") == method_colour("not-a-method")  # stable for unknown names


def test_rate_axes_leave_room_past_0_and_100() -> None:
    from kgviz.viz.eval_charts import _axis

    lo, hi = _axis("acc")["range"]  # type: ignore[index]
    assert lo < 0 and hi > 100
