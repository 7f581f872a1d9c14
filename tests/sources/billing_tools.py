"""The example billing service's operations as tool definitions, the shape the OpenAPI importer
produces (`RemoteTool` + `HttpBinding`); argument schemas are taken from the service's own document."""

from __future__ import annotations

from typing import Any

from examples.openapi_service.app import create_app
from executors.sources.http_binding import ArgumentBinding, HttpBinding
from executors.sources.tool_source import RemoteTool, ToolPolicy, ToolSnapshot

CUSTOMER = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "email": {"type": "string"}},
    "required": ["id", "name", "email"],
}


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = create_app().openapi()["components"]["schemas"][name]
    return schema


def billing_snapshot(*, create_timeout_s: float = 10.0) -> ToolSnapshot:
    invoice_create = _schema("InvoiceCreate")
    body_fields = list(invoice_create["properties"])
    search = RemoteTool(
        name="searchCustomers",
        remote_name="searchCustomers",
        description="Find customers by name; returns their ids.",
        parameters={
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 100}},
            "required": ["name"],
            "additionalProperties": False,
        },
        output_schema={"type": "object", "properties": {"customers": {"type": "array", "items": CUSTOMER}}},
        policy=ToolPolicy(retryable=True, timeout_s=10.0),
        binding=HttpBinding(
            method="GET",
            path="/customers",
            arguments=(ArgumentBinding(argument="name", location="query", name="name"),),
            operation_id="searchCustomers",
        ),
    )
    create = RemoteTool(
        name="createInvoice",
        remote_name="createInvoice",
        description="Create an invoice for a customer.",
        parameters=invoice_create,
        output_schema=_schema("Invoice"),
        policy=ToolPolicy(retryable=True, timeout_s=create_timeout_s),  # POST: safe with its Idempotency-Key
        binding=HttpBinding(
            method="POST",
            path="/invoices",
            arguments=tuple(ArgumentBinding(argument=f, location="body", name=f) for f in body_fields),
            body="properties",
            operation_id="createInvoice",
        ),
    )
    get_invoice = RemoteTool(
        name="getInvoice",
        remote_name="getInvoice",
        description="One invoice by id.",
        parameters={"type": "object", "properties": {"invoiceId": {"type": "string"}}, "required": ["invoiceId"]},
        output_schema=_schema("Invoice"),
        policy=ToolPolicy(retryable=True, timeout_s=10.0),
        binding=HttpBinding(
            method="GET",
            path="/invoices/{invoiceId}",
            arguments=(ArgumentBinding(argument="invoiceId", location="path", name="invoiceId"),),
            operation_id="getInvoice",
        ),
    )
    stats = RemoteTool(
        name="getStats",
        remote_name="getStats",
        description="How many invoices were created.",
        parameters={"type": "object", "properties": {}},
        output_schema=_schema("Stats"),
        policy=ToolPolicy(retryable=True, timeout_s=10.0),
        binding=HttpBinding(method="GET", path="/stats", operation_id="getStats"),
    )
    return ToolSnapshot(source_id="billing", tools=(search, create, get_invoice, stats))
