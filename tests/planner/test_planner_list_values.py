"""Values the request gives for lists, descriptions, Unix-time numbers and page sizes, on invented catalogs of
the shapes real APIs have (no API's text): the options the evidence offers the model are checked directly
(fast unit tests; no engine, no fake model)."""

from __future__ import annotations

from datetime import date
from typing import Any

from planner.catalog import ToolCatalog
from planner.evidence import NodeEvidence
from planner.values import extract
from tests.planner.real_catalogs import function

TODAY = date(2026, 11, 30)

CONTACTS = [
    function(
        "contactsByEmail",
        "Get contacts by their e-mail addresses.",
        {
            "emails": {
                "type": "array",
                "items": {"type": "string", "maxLength": 100},
                "description": "One or more e-mail addresses to look for.",
            },
            "external_id": {"type": "string", "description": "The contact's external ID."},
        },
        [],
    ),
    function(
        "tagContact",
        "Tag a contact.",
        {
            "contact_id": {
                "type": "string",
                "description": "The identifier of the contact. Example: 5f1a09bc3e2d.",
                "examples": ["5f1a09bc3e2d"],
            },
        },
        ["contact_id"],
    ),
]
METRICS = [
    function(
        "mailMetrics",
        "Retrieve e-mail metrics.",
        {
            "start_date": {"type": "string", "description": "Start of the range, an ISO 8601 date or datetime."},
            "end_date": {"type": "string", "description": "End of the range, an ISO 8601 date or datetime."},
            "metrics": {
                "type": "array",
                "items": {"type": "string", "enum": ["sent", "delivered", "bounced", "opened"]},
                "description": "The metrics to return.",
            },
        },
        [],
    ),
    function(
        "findCampaigns",
        "Search campaigns by name and status.",
        {
            "name": {"type": "string", "description": "The campaign's name."},
            "status": {
                "type": "array",
                "items": {"type": "string", "enum": ["draft", "scheduled", "sent"]},
                "description": "Statuses to filter by.",
            },
        },
        [],
    ),
]
HELP = [
    function(
        "createFolder",
        "Create a help-center folder.",
        {
            "name": {"type": "string", "description": "The folder's name."},
            "description": {"type": "string", "description": "The folder's description."},
        },
        [],
    ),
    function(
        "startExport",
        "Export message data.",
        {
            "created_at_after": {
                "type": "integer",
                "description": "Start of the range. It must be formatted as a unix timestamp. Example: 1527811200.",
            },
            "created_at_before": {
                "type": "integer",
                "description": "End of the range. It must be formatted as a unix timestamp. Example: 1527811200.",
            },
        },
        [],
    ),
]
AGENDA = [
    function(
        "occurrences",
        "Returns instances of a recurring event.",
        {
            "eventId": {"type": "string", "description": "Recurring event identifier."},
            "maxResults": {"type": "integer", "description": "Maximum number of events returned on one page."},
            "maxAttendees": {"type": "integer", "description": "The maximum number of attendees to include."},
        },
        ["eventId"],
        {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object"}}}},
    ),
]


def values_of(tools: list[dict[str, Any]], tool: str, request: str) -> dict[str, Any]:
    node = NodeEvidence(extract(request, TODAY), None, []).node(ToolCatalog.from_openai(tools).get(tool))
    return {arg: options.values for arg, options in node.items() if options.values}


def test_a_list_of_addresses_takes_the_address_the_request_gives() -> None:
    found = values_of(CONTACTS, "contactsByEmail", "Find the contact with email kim@orbit.io.")
    assert found == {"emails": (["kim@orbit.io"],)}


def test_an_address_never_fills_an_identifier_whose_examples_are_no_addresses() -> None:
    found = values_of(CONTACTS, "tagContact", "Tag the contact omar@fastfreight.com.")
    assert "omar@fastfreight.com" not in found.get("contact_id", ())


def test_an_optional_list_of_options_takes_the_options_the_request_names() -> None:
    found = values_of(METRICS, "mailMetrics", "How many emails were delivered and bounced between 2027-02-01 and 2027-02-28?")  # fmt: skip
    assert found["metrics"] == (["delivered", "bounced"],)
    assert found["start_date"] == ("2027-02-01",) and found["end_date"] == ("2027-02-28",)


def test_an_optional_list_takes_no_option_the_requests_verb_names() -> None:
    found = values_of(METRICS, "findCampaigns", "Schedule the campaign named 'Spring Sale' for April 2, 2027.")
    assert "status" not in found and found["name"] == ("Spring Sale",)


def test_described_as_names_the_description() -> None:
    found = values_of(HELP, "createFolder", "Create a folder called 'Billing FAQ' described as 'Refunds and invoices'.")  # fmt: skip
    assert found == {"name": ("Billing FAQ",), "description": ("Refunds and invoices",)}
    chinese = values_of(HELP, "createFolder", "创建一个名为“产品更新”的文件夹，描述为“每月产品新闻”。")
    assert chinese["description"] == ("每月产品新闻",)


def test_a_number_declared_as_a_unix_timestamp_takes_the_dates_of_its_range() -> None:
    found = values_of(HELP, "startExport", "Export message data from January 1, 2027 to February 1, 2027 (UTC).")
    assert found == {"created_at_after": (1798761600,), "created_at_before": (1801440000,)}


def test_a_list_size_goes_to_the_limit_that_counts_the_results() -> None:
    found = values_of(AGENDA, "occurrences", "Show 5 occurrences of event evt_42abc.")
    assert found.get("maxResults") == (5,) and "maxAttendees" not in found
