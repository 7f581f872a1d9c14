"""A small billing service (FastAPI) with a real OpenAPI 3.1 document at /openapi.json.

Operations:
- `searchCustomers` — `GET /customers?name=...`: customers whose name contains `name`, with ids.
- `createInvoice` — `POST /invoices`: an invoice for a customer id (from the search), with optional
  fields and a `dueDate` in the declared `date` format. It honours the `Idempotency-Key` header:
  the same key with the same body returns the invoice it created the first time (no second one);
  the same key with another body is a 422.
- `getInvoice` — `GET /invoices/{invoiceId}`.
- `getStats` — `GET /stats`: how many invoices were really created (what tests count).

The `Idempotency-Key` header is read by the service but not declared as a parameter: the caller's
infrastructure sets it, never the model. State lives in the app (one ledger per app), nothing at
module level.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date
from typing import Annotated, Literal

from fastapi import FastAPI, HTTPException, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field


class Customer(BaseModel):
    id: str = Field(description="Customer id, e.g. 'cus_100'.")
    name: str
    email: str


class CustomerList(BaseModel):
    customers: list[Customer]


class InvoiceCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    customerId: str = Field(pattern=r"^cus_[0-9]+$", description="The id of the customer (from searchCustomers).")
    amountCents: int = Field(gt=0, le=10_000_000, description="Amount in cents.")
    currency: Literal["EUR", "USD", "CNY"] = "EUR"
    dueDate: date | None = Field(default=None, description="Due date (YYYY-MM-DD).")
    memo: str | None = Field(default=None, max_length=200)


class Invoice(InvoiceCreate):
    id: str
    status: Literal["open", "paid"] = "open"


class Stats(BaseModel):
    invoicesCreated: int
    idempotentReplays: int


class Ledger:
    """The service's data: customers, invoices, and the invoice each idempotency key produced."""

    def __init__(self) -> None:
        self.customers = [
            Customer(id="cus_100", name="Acme Corporation", email="billing@acme.example"),
            Customer(id="cus_101", name="Globex", email="accounts@globex.example"),
            Customer(id="cus_102", name="Initech", email="ap@initech.example"),
        ]
        self.invoices: dict[str, Invoice] = {}
        self.by_key: dict[str, tuple[str, str]] = {}  # key -> (body fingerprint, invoice id)
        self.replays = 0


def create_app() -> FastAPI:
    ledger = Ledger()
    app = FastAPI(
        title="Example billing service",
        version="1.0.0",
        description="Customers and invoices; the service a planstack README walkthrough connects to.",
    )

    @app.get("/health", include_in_schema=False)
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/customers", operation_id="searchCustomers", response_model=CustomerList)
    async def search_customers(
        name: Annotated[str, Query(min_length=1, max_length=100, description="Part of the customer's name.")],
    ) -> CustomerList:
        """Find customers by name; returns their ids."""
        wanted = name.lower()
        return CustomerList(customers=[c for c in ledger.customers if wanted in c.name.lower()])

    @app.post("/invoices", operation_id="createInvoice", status_code=201, response_model=Invoice)
    async def create_invoice(invoice: InvoiceCreate, request: Request, response: Response) -> Invoice:
        """Create an invoice for a customer. Send an `Idempotency-Key` header to make retries safe."""
        if not any(c.id == invoice.customerId for c in ledger.customers):
            raise HTTPException(status_code=404, detail=f"no customer {invoice.customerId}")
        key = request.headers.get("idempotency-key")
        fingerprint = hashlib.sha256(json.dumps(invoice.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
        if key is not None and key in ledger.by_key:
            seen_fingerprint, invoice_id = ledger.by_key[key]
            if seen_fingerprint != fingerprint:
                raise HTTPException(status_code=422, detail="this Idempotency-Key was used with another body")
            ledger.replays += 1
            response.headers["Idempotent-Replayed"] = "true"
            return ledger.invoices[invoice_id]
        created = Invoice(id=f"inv_{len(ledger.invoices) + 1:04d}", **invoice.model_dump())
        ledger.invoices[created.id] = created
        if key is not None:
            ledger.by_key[key] = (fingerprint, created.id)
        return created

    @app.get("/invoices/{invoiceId}", operation_id="getInvoice", response_model=Invoice)
    async def get_invoice(invoiceId: str) -> Invoice:
        """One invoice by id."""
        found = ledger.invoices.get(invoiceId)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no invoice {invoiceId}")
        return found

    @app.get("/stats", operation_id="getStats", response_model=Stats)
    async def get_stats() -> Stats:
        """How many invoices were created, and how many requests replayed an earlier creation."""
        return Stats(invoicesCreated=len(ledger.invoices), idempotentReplays=ledger.replays)

    return app
