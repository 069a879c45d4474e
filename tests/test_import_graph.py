"""No import cycles in kgviz (issue 11). The graph is read from the source with ast."""
from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support.imports import build, cycles, package_edges, package_graph

# The package pairs issue 11 found importing each other; each must stay one-way.
ONCE_TANGLED = [("kgviz.index", "kgviz.tasks"), ("kgviz.compare", "kgviz.verify"), ("kgviz.evaluate", "kgviz.viz")]


def test_no_cycle_among_module_level_imports() -> None:
    assert cycles(build().top_level) == []


def test_no_cycle_even_counting_deferred_imports() -> None:
    # no allowance left: graph/search.py takes the store as an argument typed by its own
    # SearchHost Protocol, so it never imports graph/store.py (the old mixin cycle)
    assert cycles(build().every) == []


def test_no_cycle_among_packages() -> None:
    # each subpackage (kgviz.index, kgviz.offline, ...) and each top-level module (kgviz.config,
    # kgviz.run, ...) is one node; the order is in docs/ARCHITECTURE.md, "Layering rules"
    assert cycles(package_graph(build().every)) == []


def test_search_never_imports_the_store() -> None:
    assert "kgviz.graph.store" not in build().every["kgviz.graph.search"]


def test_typed_task_results_are_a_leaf() -> None:
    # tasks/, offline/ and methods/ all read kgviz.task_results; it must not pull any of them in
    assert build().every["kgviz.task_results"] == set()


def test_package_pairs_that_were_cycles_are_one_way() -> None:
    edges = package_edges(build().every)
    both_ways = {pair: (sorted(edges[pair]), sorted(edges[pair[::-1]]))
                 for pair in ONCE_TANGLED if pair in edges and pair[::-1] in edges}
    assert both_ways == {}


def test_the_reader_sees_function_level_and_type_only_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "kgviz"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from kgviz.sub import b\n")
    (pkg / "sub" / "b.py").write_text(textwrap.dedent("""
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from kgviz.a import thing
        def f():
            import kgviz.c
    """))
    (pkg / "c.py").write_text("from kgviz.sub.b import f\n")
    g = build(pkg)
    assert g.top_level["kgviz.a"] == {"kgviz.sub.b"} and g.top_level["kgviz.sub.b"] == set()
    assert g.every["kgviz.sub.b"] == {"kgviz.a", "kgviz.c"}
    assert cycles(g.top_level) == []
    assert cycles(g.every) == [["kgviz.a", "kgviz.c", "kgviz.sub.b"]]
    assert package_edges(g.every)[("kgviz.sub", "kgviz.a")] == {("kgviz.sub.b", "kgviz.a")}
    assert package_graph(g.every) == {"kgviz": set(), "kgviz.a": {"kgviz.sub"}, "kgviz.c": {"kgviz.sub"},
                                      "kgviz.sub": {"kgviz.a", "kgviz.c"}}
    assert cycles(package_graph(g.every)) == [["kgviz.a", "kgviz.c", "kgviz.sub"]]
