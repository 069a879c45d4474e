"""`kgviz bench`: find the benchmark suite of the source checkout and run it.

The suite itself (benchmarks/suite.py) drives the scripts beside it in benchmarks/, so it only
works from a checkout; it is loaded from there by path rather than shipped inside the package.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from kgviz.errors import KgvizError

SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "suite.py"


def load_suite(path: Path = SUITE) -> ModuleType:
    """The benchmark suite module; KgvizError when kgviz runs from an install without benchmarks/."""
    if not path.is_file():
        raise KgvizError(f"the benchmark suite {path} is not there", hint="run `kgviz bench` from a source checkout")
    spec = importlib.util.spec_from_file_location("kgviz_benchmark_suite", path)
    if spec is None or spec.loader is None:
        raise KgvizError(f"the benchmark suite {path} cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_bench(*, quick: bool = False, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One JSON-ready document of figures, each with its target and whether it was met."""
    return load_suite().run_bench(quick=quick, log=log)


def format_bench(report: dict[str, Any]) -> str:
    """The report as a few lines of text (one per figure)."""
    return load_suite().format_bench(report)
