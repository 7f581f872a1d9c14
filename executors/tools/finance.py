"""Finance tools: `check_budget`, `convert_currency` (docs/demo-catalog.md). Rates are the fixed
table in `executors/data/currency.json` (CNY per unit of each currency)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from executors.errors import ToolDataNotFound
from executors.registry import ToolRegistry
from executors.tools.data import DemoData

CurrencyCode = Annotated[str, Field(pattern=r"^[A-Za-z]{3}$", description='ISO 4217 code, e.g. "USD".')]


class BudgetCheck(BaseModel):
    total: float
    limit: float
    within_budget: bool = Field(description="total <= limit")
    remaining: float = Field(description="limit - total (negative when over budget).")


class Conversion(BaseModel):
    amount: float = Field(description="The converted amount, rounded to 2 decimals.")
    currency: str = Field(description="The currency of `amount`.")
    rate: float = Field(description="Units of the target currency per unit of the source currency.")


def register_finance(registry: ToolRegistry, data: DemoData) -> None:
    cny_per_unit: dict[str, float] = data.currency["cny_per_unit"]

    @registry.tool(version="1", timeout_s=5, retries=2, concurrency_class="finance")
    def check_budget(
        amounts: Annotated[list[float], Field(max_length=100, description="Amounts to add up, CNY.")],
        limit: Annotated[float, Field(ge=0, description="Budget limit, CNY.")],
    ) -> BudgetCheck:
        """Add up amounts and compare the total with a budget limit."""
        total = round(sum(amounts), 2)
        return BudgetCheck(total=total, limit=limit, within_budget=total <= limit, remaining=round(limit - total, 2))

    @registry.tool(version="1", timeout_s=5, retries=2, concurrency_class="finance")
    def convert_currency(
        amount: Annotated[float, Field(description="Amount in the source currency.")],
        from_currency: Annotated[CurrencyCode, Field(description='Source currency, e.g. "CNY".')],
        to_currency: Annotated[CurrencyCode, Field(description='Target currency, e.g. "USD".')],
    ) -> Conversion:
        """Convert an amount between currencies at the shipped reference rates."""
        source, target = from_currency.upper(), to_currency.upper()
        for code in (source, target):
            if code not in cny_per_unit:
                raise ToolDataNotFound(f"unknown currency {code}", hint=f"known: {', '.join(sorted(cny_per_unit))}")
        rate = cny_per_unit[source] / cny_per_unit[target]
        return Conversion(amount=round(amount * rate, 2), currency=target, rate=round(rate, 6))
