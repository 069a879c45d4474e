"""A base for the small stand-in methods tests register (run errors, page rendering): the
``Method`` protocol's class attributes with test defaults, so a stand-in states only what it is
about (its name, title, Params, presets) and its ``retrieve``."""
from __future__ import annotations

from typing import Any, ClassVar


class StandInMethod:
    name: ClassVar[str]
    title: ClassVar[str] = "Test stand-in"
    paper: ClassVar[str] = "test"
    Params: ClassVar[type]
    presets: ClassVar[dict[str, Any]] = {}
    budget_param: ClassVar[str | None] = None
    no_context: ClassVar[bool] = False
