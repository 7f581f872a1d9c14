"""A small inventory MCP server written with the official `mcp` SDK (streamable HTTP or stdio).

Tools (every one with input and output schemas):
- `find_products(name)` — read-only lookup; returns product ids.
- `get_stock(product_id)` — read-only; needs an id `find_products` returned (an unknown id is a
  tool error, `isError`).
- `discontinue_product(product_id)` — `destructiveHint`: planstack asks a person before calling it.
- `stock_report(seconds)` — slow on purpose: takes `seconds` (at most 30) to answer.
- `enable_reorders()` — adds a `reorder_product` tool and announces it
  (`notifications/tools/list_changed`), the way a server's catalog changes at run time.

State lives in the server object (one per process), nothing at module level.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.types import ToolAnnotations, ToolListChangedNotification
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

ProductId = Annotated[str, Field(description="A product id, as find_products returns it (e.g. 'prd_1001').")]


class Product(BaseModel):
    product_id: str
    name: str
    unit_price_cents: int


class ProductMatches(BaseModel):
    products: list[Product]


class Stock(BaseModel):
    product_id: str
    warehouse: str
    quantity: int
    discontinued: bool


class Discontinued(BaseModel):
    product_id: str
    discontinued: bool


class StockReport(BaseModel):
    products: int
    units: int


class Enabled(BaseModel):
    enabled: bool


class Reorder(BaseModel):
    product_id: str
    quantity: int
    order_id: str


class Inventory:
    """The data the tools work on."""

    def __init__(self) -> None:
        self.products = {
            "prd_1001": Product(product_id="prd_1001", name="Steel bolt M8", unit_price_cents=35),
            "prd_1002": Product(product_id="prd_1002", name="Steel nut M8", unit_price_cents=12),
            "prd_1003": Product(product_id="prd_1003", name="Brass hinge", unit_price_cents=480),
        }
        self.quantities = {"prd_1001": 1200, "prd_1002": 3400, "prd_1003": 75}
        self.discontinued: set[str] = set()
        self.orders = 0

    def product(self, product_id: str) -> Product:
        found = self.products.get(product_id)
        if found is None:
            raise ToolError(f"no product with id {product_id!r}; use find_products to look ids up")
        return found


def build_server() -> MCPServer[Any]:
    inventory = Inventory()
    bus = InMemorySubscriptionBus()
    server: MCPServer[Any] = MCPServer(
        "planstack-example-inventory",
        instructions="A small warehouse: look products up by name, then read or change their stock.",
        subscriptions=bus,
        log_level="WARNING",
    )

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def find_products(name: Annotated[str, Field(min_length=1, max_length=100)]) -> ProductMatches:
        """Products whose name contains `name` (case-insensitive), with their ids."""
        wanted = name.lower()
        return ProductMatches(products=[p for p in inventory.products.values() if wanted in p.name.lower()])

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def get_stock(product_id: ProductId) -> Stock:
        """How many units of a product the warehouse holds."""
        product = inventory.product(product_id)
        return Stock(
            product_id=product.product_id,
            warehouse="main",
            quantity=inventory.quantities[product_id],
            discontinued=product_id in inventory.discontinued,
        )

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def discontinue_product(product_id: ProductId) -> Discontinued:
        """Stop selling a product (cannot be undone here)."""
        inventory.discontinued.add(inventory.product(product_id).product_id)
        return Discontinued(product_id=product_id, discontinued=True)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def stock_report(
        seconds: Annotated[float, Field(ge=0, le=30, description="How long the report takes to build.")] = 2.0,
    ) -> StockReport:
        """A summary of the whole warehouse; slow (it takes `seconds`)."""
        await asyncio.sleep(seconds)
        return StockReport(products=len(inventory.products), units=sum(inventory.quantities.values()))

    async def reorder_product(product_id: ProductId, quantity: Annotated[int, Field(gt=0, le=10_000)]) -> Reorder:
        """Order more units of a product from its supplier."""
        inventory.product(product_id)
        inventory.orders += 1
        return Reorder(product_id=product_id, quantity=quantity, order_id=f"ord_{inventory.orders}")

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True))
    async def enable_reorders(ctx: Context) -> Enabled:
        """Turn on the reorder_product tool (announced with notifications/tools/list_changed)."""
        if "reorder_product" not in {tool.name for tool in await server.list_tools()}:
            server.add_tool(reorder_product, annotations=ToolAnnotations(idempotent_hint=False))
            await ctx.notify_tools_changed()  # 2026-07-28 clients: their subscriptions/listen stream
            # Handshake-era clients: on this call's own response stream, so it arrives before the result.
            request = ctx.request_context
            await request.session.send_notification(ToolListChangedNotification(), request.request_id)
        return Enabled(enabled=True)

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    return server
