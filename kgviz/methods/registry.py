"""All retrieval methods by name, in display order: the four papers, then the baselines.

The registry is explicit: every method module is imported here, so a missing or broken module is
an ImportError at once rather than a method that silently is not listed. Each module's classes
still carry ``@register`` (their name lives on the class); ``list_methods`` orders by the module
list below so the order never depends on who imported what first.
"""
from __future__ import annotations

from kgviz.errors import UnknownMethodError
from kgviz.methods import kg_infused, kg_rag, kg_retriever, ket_rag, no_retrieval, text_rag
from kgviz.methods.base import Method, registered

_MODULES = (kg_rag, kg_retriever, kg_infused, ket_rag, text_rag, no_retrieval)
_RANK = {m.__name__: i for i, m in enumerate(_MODULES)}


def list_methods() -> list[str]:
    """Registered method names in display order (module order, then the order within a module)."""
    methods = registered()
    order = {name: i for i, name in enumerate(methods)}
    return sorted(methods, key=lambda n: (_RANK.get(getattr(methods[n], "__module__", ""), len(_RANK)), order[n]))


def get_method(name: str) -> Method:
    """A fresh instance of the method registered as ``name``."""
    methods = registered()
    if name not in methods:
        raise UnknownMethodError(f"unknown method {name!r}; available: {', '.join(methods) or '(none)'}",
                                 hint="run `kgviz methods` to list them")
    return methods[name]()
