"""All retrieval methods by name. Importing a method module registers it (``@register``); modules
of methods not written yet are skipped, so the list grows as methods land."""
from __future__ import annotations

import importlib

from kgviz.errors import UnknownMethodError
from kgviz.methods.base import Method, registered

# display order: the four papers, then the baselines
_MODULES = (
    "kgviz.methods.kg_rag",
    "kgviz.methods.kg_retriever",
    "kgviz.methods.kg_infused",
    "kgviz.methods.ket_rag",
    "kgviz.methods.text_rag",
    "kgviz.methods.no_retrieval",
)
_loaded = False


def _load() -> None:
    global _loaded
    if _loaded:
        return
    for mod in _MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:  # the module exists but one of its imports is missing: a real bug
                raise
    _loaded = True


def list_methods() -> list[str]:
    """Registered method names in display order."""
    _load()
    methods = registered()
    rank = {mod: i for i, mod in enumerate(_MODULES)}
    # registration order depends on who imported what first; the display order should not
    return sorted(methods, key=lambda n: rank.get(getattr(methods[n], "__module__", ""), len(rank)))


def get_method(name: str) -> Method:
    """A fresh instance of the method registered as ``name``."""
    _load()
    methods = registered()
    if name not in methods:
        raise UnknownMethodError(f"unknown method {name!r}; available: {', '.join(methods) or '(none)'}",
                                 hint="run `kgviz methods` to list them")
    return methods[name]()
