"""An editable price table: US$ per 1M input / output tokens, per provider and model.

The defaults below are *editable defaults*, collected 2026-11 from the providers' public price
lists; prices change, so the app lets users edit them and saves the table as JSON at
``Settings.price_table_path``. A model missing from the table costs 0 and ``known()`` says so, so
the UI can print "price unknown" instead of a misleading $0.00. The offline mode and local
OpenAI-compatible servers have no entries: they cost nothing.

A dated snapshot id such as ``claude-haiku-4-5-20251001`` or ``gpt-4o-2024-08-06`` is priced as
its base name; other suffixes (``gpt-5.1``, ``gpt-5-pro``) are different models and are not.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from kgviz.errors import ConfigError

PRICES_AS_OF = "2026-11"
FORMAT_VERSION = 1

# (provider, model) -> (input $/1M tokens, output $/1M tokens). Editable defaults, 2026-11.
DEFAULT_PRICES: dict[tuple[str, str], tuple[float, float]] = {
    ("anthropic", "claude-opus-4-6"): (5.00, 25.00),
    ("anthropic", "claude-opus-4-5"): (5.00, 25.00),
    ("anthropic", "claude-opus-4-1"): (15.00, 75.00),
    ("anthropic", "claude-sonnet-4-6"): (3.00, 15.00),
    ("anthropic", "claude-sonnet-4-5"): (3.00, 15.00),
    ("anthropic", "claude-haiku-4-5"): (1.00, 5.00),
    ("openai", "gpt-5"): (1.25, 10.00),
    ("openai", "gpt-5.1"): (1.25, 10.00),
    ("openai", "gpt-5-mini"): (0.25, 2.00),
    ("openai", "gpt-5-nano"): (0.05, 0.40),
    ("openai", "gpt-4.1"): (2.00, 8.00),
    ("openai", "gpt-4.1-mini"): (0.40, 1.60),
    ("openai", "gpt-4o-mini"): (0.15, 0.60),
}

_SNAPSHOT_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")


@dataclass(frozen=True)
class Price:
    input_per_m: float
    output_per_m: float


class PriceTable:
    def __init__(self, prices: dict[tuple[str, str], tuple[float, float]] | None = None, *, as_of: str = PRICES_AS_OF) -> None:
        source = DEFAULT_PRICES if prices is None else prices
        self._prices = {key: Price(float(i), float(o)) for key, (i, o) in source.items()}
        self.as_of = as_of

    # --- lookups ---------------------------------------------------------------------------------
    def _find(self, provider: str, model: str) -> Price | None:
        price = self._prices.get((provider, model))
        if price is None:
            base = _SNAPSHOT_SUFFIX.sub("", model)
            price = self._prices.get((provider, base))
        return price

    def known(self, provider: str, model: str) -> bool:
        return self._find(provider, model) is not None

    def get(self, provider: str, model: str) -> Price | None:
        return self._find(provider, model)

    def cost(self, provider: str, model: str, input_tokens: int, output_tokens: int) -> float:
        """US$ for one call (0.0 for offline and for models not in the table)."""
        price = self._find(provider, model)
        if price is None:
            return 0.0
        return (input_tokens * price.input_per_m + output_tokens * price.output_per_m) / 1_000_000

    # --- editing ---------------------------------------------------------------------------------
    def set(self, provider: str, model: str, input_per_m: float, output_per_m: float) -> None:
        if input_per_m < 0 or output_per_m < 0:
            raise ConfigError(f"prices must not be negative (got {input_per_m}, {output_per_m} for {provider}:{model})")
        self._prices[(provider, model)] = Price(float(input_per_m), float(output_per_m))

    def remove(self, provider: str, model: str) -> None:
        self._prices.pop((provider, model), None)

    def rows(self) -> list[dict[str, Any]]:
        """Flat rows for an editable table in the UI."""
        return [
            {"provider": p, "model": m, "input_per_m": v.input_per_m, "output_per_m": v.output_per_m}
            for (p, m), v in sorted(self._prices.items())
        ]

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]], *, as_of: str = PRICES_AS_OF) -> "PriceTable":
        table = cls({}, as_of=as_of)
        for i, row in enumerate(rows):
            try:
                provider, model = str(row["provider"]).strip(), str(row["model"]).strip()
                inp, out = float(row["input_per_m"]), float(row["output_per_m"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigError(f"price row {i + 1} is incomplete or not numeric: {row!r}") from exc
            if not provider or not model:
                raise ConfigError(f"price row {i + 1} needs both a provider and a model")
            table.set(provider, model, inp, out)
        return table

    # --- persistence -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "note": "US$ per 1M tokens. Editable defaults; check the providers' price pages.",
            "as_of": self.as_of,
            "prices": self.rows(),
        }

    def save(self, path: Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)  # never leave a half-written table behind

    @classmethod
    def load(cls, path: Path) -> "PriceTable":
        """The saved table, or the defaults when no file exists yet."""
        path = Path(path)
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot read the price table {path}: {exc}", hint="fix or delete the file to get the defaults back"
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("prices"), list):
            raise ConfigError(
                f"{path} is not a kgviz price table (expected a 'prices' list)",
                hint="fix or delete the file to get the defaults back",
            )
        return cls.from_rows(data["prices"], as_of=str(data.get("as_of", PRICES_AS_OF)))
