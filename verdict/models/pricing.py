"""Model prices (USD per million tokens) and the cost of a call.

The built-in table holds list prices published by the providers when this was written; prices
change, so override them: `PriceTable.default().with_prices({"gpt-4o-mini": Price(0.15, 0.60)})`,
or pass `prices={...}` to a model. Names match exactly first, then by longest prefix, so dated
snapshots ("gpt-4o-mini-2024-07-18", "claude-sonnet-4-5-20250929") find their family. A model
with no price (a local vLLM/Ollama server, say) costs 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float

    def __post_init__(self) -> None:
        if self.input_per_mtok < 0 or self.output_per_mtok < 0:
            raise ValueError(f"prices must be >= 0, got {self.input_per_mtok}/{self.output_per_mtok}")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1_000_000


_DEFAULT_PRICES = {
    # OpenAI
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    # Anthropic
    "claude-opus-4-5": Price(5.00, 25.00),
    "claude-opus-4": Price(15.00, 75.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-haiku-4-5": Price(1.00, 5.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-3-haiku": Price(0.25, 1.25),
}


class PriceTable:
    """Immutable model-name → Price lookup."""

    def __init__(self, prices: Mapping[str, Price]) -> None:
        self._prices = MappingProxyType(dict(prices))
        # Longest names first so "gpt-4o-mini-2024-07-18" matches gpt-4o-mini, not gpt-4o.
        self._by_length = sorted(self._prices, key=len, reverse=True)

    @classmethod
    def default(cls) -> PriceTable:
        return cls(_DEFAULT_PRICES)

    def with_prices(self, overrides: Mapping[str, Price | tuple[float, float]]) -> PriceTable:
        """A new table with these entries added or replaced; tuples are (input, output) per Mtok."""
        merged = dict(self._prices)
        for name, price in overrides.items():
            merged[name] = price if isinstance(price, Price) else Price(*price)
        return PriceTable(merged)

    def price(self, model: str) -> Price | None:
        exact = self._prices.get(model)
        if exact is not None:
            return exact
        return next((self._prices[name] for name in self._by_length if model.startswith(name)), None)

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.price(model)
        return price.cost(input_tokens, output_tokens) if price is not None else 0.0


def price_table(prices: PriceTable | Mapping[str, Price | tuple[float, float]] | None) -> PriceTable:
    """Normalise a model's `prices=` option: a table, overrides on the default table, or None."""
    if isinstance(prices, PriceTable):
        return prices
    return PriceTable.default().with_prices(prices or {})
