"""Hand-made catalogs of the shape real REST APIs have: camelCase parameters, many optional ones, an
identifier only a lookup operation returns, dates declared in `format` or in a description. Invented
services (no real API's text), used by the planner's unit tests and its engine tests."""

from __future__ import annotations

from typing import Any


def function(
    name: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    output: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
    }
    if output is not None:
        body["output_schema"] = output
    return {"type": "function", "function": body}


SEARCH_CUSTOMERS = function(
    "searchCustomers",
    "Search the customers of the account by name, e-mail or phone.",
    {
        "query": {"type": "string", "description": "Free text matched against name, e-mail and phone."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Page size (default 20)."},
        "includeArchived": {"type": "boolean", "description": "Also return archived customers."},
        "sortBy": {"type": "string", "enum": ["name", "createdAt", "balance"]},
        "pageToken": {"type": "string", "description": "Token of the page to return."},
        "country": {"type": "string", "description": "ISO 3166-1 alpha-2 country code."},
    },
    ["query"],
    {
        "type": "object",
        "properties": {
            "customers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "customerId": {"type": "string"},
                        "displayName": {"type": "string"},
                        "email": {"type": "string"},
                    },
                },
            },
            "nextPageToken": {"type": "string"},
        },
    },
)

CREATE_INVOICE = function(
    "createInvoice",
    "Create an invoice for a customer.",
    {
        "customerId": {"type": "string", "description": "ID of the customer to bill."},
        "amount": {"type": "number", "description": "Total amount of the invoice."},
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY"], "description": "Currency code."},
        "dueDays": {"type": "integer", "description": "Days until payment is due."},
        "notes": {"type": "string", "description": "Notes printed on the invoice."},
        "issueDate": {"type": "string", "description": "Date of issue. Format: YYYY-MM-DD"},
        "sendEmail": {"type": "boolean", "description": "E-mail the invoice to the customer."},
        "purchaseOrder": {"type": "string", "description": "The customer's purchase order number."},
        "taxRate": {"type": "number", "description": "Tax rate in percent."},
    },
    ["customerId", "amount"],
    {"type": "object", "properties": {"invoiceId": {"type": "string"}, "status": {"type": "string"}}},
)

LIST_INVOICES = function(
    "listInvoices",
    "List the invoices of a customer.",
    {
        "customerId": {"type": "string", "description": "Customer identifier."},
        "status": {"type": "string", "enum": ["draft", "open", "paid", "void"]},
        "issuedAfter": {"type": "string", "format": "date"},
        "issuedBefore": {"type": "string", "format": "date"},
        "limit": {"type": "integer"},
        "pageToken": {"type": "string"},
    },
    ["customerId"],
    {"type": "object", "properties": {"invoices": {"type": "array", "items": {"type": "object"}}}},
)

SEND_EMAIL = function(
    "sendEmail",
    "Send an e-mail message.",
    {
        "to": {"type": "string", "format": "email"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
        "cc": {"type": "string"},
        "replyTo": {"type": "string"},
        "priority": {"type": "string", "enum": ["low", "normal", "high"]},
    },
    ["to", "subject"],
)

GET_EXCHANGE_RATE = function(
    "getExchangeRate",
    "Get the exchange rate between two currencies.",
    {
        "base": {"type": "string", "description": "Base currency code."},
        "symbols": {"type": "string", "description": "Comma-separated currency codes."},
        "date": {"type": "string", "format": "date"},
    },
    ["base"],
    {"type": "object", "properties": {"rates": {"type": "object"}}},
)

CREATE_TASK = function(
    "createTask",
    "Create a to-do task in a project.",
    {
        "title": {"type": "string"},
        "projectId": {"type": "string"},
        "dueDate": {"type": "string", "format": "date"},
        "assignee": {"type": "string"},
        "labels": {"type": "array", "items": {"type": "string"}},
        "priority": {"type": "integer", "minimum": 1, "maximum": 4},
    },
    ["title"],
)

CRM = [SEARCH_CUSTOMERS, CREATE_INVOICE, LIST_INVOICES, SEND_EMAIL, GET_EXCHANGE_RATE, CREATE_TASK]

SEARCH_AIRPORTS = function(
    "searchLocations",
    "Find airports and cities by keyword; returns their IATA codes.",
    {
        "keyword": {"type": "string", "description": "Name or part of the name of a city or airport."},
        "subType": {"type": "string", "enum": ["AIRPORT", "CITY"]},
        "countryCode": {"type": "string"},
        "pageLimit": {"type": "integer"},
    },
    ["keyword"],
    {
        "type": "object",
        "properties": {
            "data": {
                "type": "array",
                "items": {"type": "object", "properties": {"iataCode": {"type": "string"}, "name": {"type": "string"}}},
            }
        },
    },
)

SEARCH_OFFERS = function(
    "searchFlightOffers",
    "Search flight offers between two airports on a date.",
    {
        "originLocationCode": {"type": "string", "description": "IATA code of the departure airport."},
        "destinationLocationCode": {"type": "string", "description": "IATA code of the arrival airport."},
        "departureDate": {"type": "string", "format": "date", "description": "Departure date."},
        "adults": {"type": "integer", "minimum": 1, "maximum": 9},
        "returnDate": {"type": "string", "format": "date"},
        "travelClass": {"type": "string", "enum": ["ECONOMY", "PREMIUM_ECONOMY", "BUSINESS", "FIRST"]},
        "nonStop": {"type": "boolean"},
        "maxPrice": {"type": "integer"},
        "currencyCode": {"type": "string"},
        "max": {"type": "integer", "description": "Most offers to return."},
        "children": {"type": "integer"},
        "includedAirlineCodes": {"type": "string"},
    },
    ["originLocationCode", "destinationLocationCode", "departureDate", "adults"],
    {"type": "object", "properties": {"data": {"type": "array", "items": {"type": "object"}}}},
)

GET_FORECAST = function(
    "getForecast",
    "Weather forecast for a point given by latitude and longitude.",
    {
        "latitude": {"type": "number"},
        "longitude": {"type": "number"},
        "startDate": {"type": "string", "description": "First day, in ISO 8601 format (YYYY-MM-DD)."},
        "endDate": {"type": "string", "description": "Last day, in ISO 8601 format (YYYY-MM-DD)."},
        "temperatureUnit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "timezone": {"type": "string"},
    },
    ["latitude", "longitude"],
)

GEOCODE = function(
    "geocodePlace",
    "Look up the coordinates of a place name.",
    {"name": {"type": "string"}, "count": {"type": "integer"}, "language": {"type": "string"}},
    ["name"],
    {
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}},
                },
            }
        },
    },
)

TRAVEL = [SEARCH_AIRPORTS, SEARCH_OFFERS, GET_FORECAST, GEOCODE, SEND_EMAIL, CREATE_TASK]


def without_outputs(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same tools as plain OpenAI functions (no output schemas)."""
    out = []
    for entry in tools:
        body = {k: v for k, v in entry["function"].items() if k != "output_schema"}
        out.append({"type": "function", "function": body})
    return out


EVENT_BODY = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "start": {"type": "object", "properties": {"dateTime": {"type": "string", "format": "date-time"}}},
        "attendees": {"type": "array", "items": {"type": "object", "properties": {"email": {"type": "string"}}}},
    },
}
"""A calendar event's request body: a title, a start inside an object, a list of attendee objects."""
