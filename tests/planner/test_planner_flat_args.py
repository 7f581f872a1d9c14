"""Object arguments planned field by field (planner/flat_args.py) and money written into amount objects
(planner/money.py), on invented catalogs of the shapes payment and calendar APIs have. The scripted fake
model stands in for the engine: the tests check the fields the planner offers and the plan it nests back."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

import pytest

from contract.demonstrations import Demonstration
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.evidence import NodeEvidence
from planner.flat_args import flat_catalog, flat_demo, flat_tool, nest_args, nest_plan, siblings
from planner.money import Money, in_declared_unit, money_in
from planner.service import PlannerService
from planner.similarity import CachedEmbedder
from planner.values import extract
from tests.fakes.llm import FakePlannerLLM
from tests.planner.real_catalogs import EVENT_BODY, function

TODAY = date(2026, 11, 30)
AMOUNT = {
    "type": "object",
    "properties": {
        "currency": {"type": "string", "minLength": 3, "maxLength": 3, "description": "ISO currency code."},
        "value": {"type": "integer", "description": "The amount in minor units."},
    },
    "required": ["currency", "value"],
}
REFUND = function(
    "refundPayment",
    "Refund a payment.",
    {
        "paymentId": {"type": "string", "description": "The payment to refund."},
        "amount": AMOUNT,
        "reference": {"type": "string", "description": "Your reference for the refund."},
        "device": {"type": "object", "properties": {"reference": {"type": "string"}, "os": {"type": "string"}}},
    },
    ["paymentId"],
)
LINK = function(
    "createPaymentLink",
    "Create a payment link.",
    {
        "body": {
            "type": "object",
            "properties": {
                "amount": AMOUNT,
                "reference": {"type": "string", "description": "A reference for the order."},
                "expiresAt": {"type": "string", "format": "date-time"},
            },
            "required": ["amount", "reference"],
        }
    },
    ["body"],
)
EVENT = function(
    "insertEvent",
    "Create a calendar event.",
    {
        "calendarId": {"type": "string", "description": 'Calendar identifier; the "primary" keyword works.'},
        "body": EVENT_BODY,
    },
    ["calendarId"],
)
EMBEDDER: list[CachedEmbedder] = []


@pytest.fixture(autouse=True)
def _embedder(minilm: CachedEmbedder) -> None:
    EMBEDDER[:] = [minilm]


def views(*tools: dict[str, Any]) -> ToolCatalog:
    return flat_catalog(ToolCatalog.from_openai(list(tools)))


# the flat view -----------------------------------------------------------------------------------------
def test_object_arguments_become_fields_named_by_their_path() -> None:
    event = views(EVENT).get("insertEvent")
    assert list(event.properties) == ["calendarId", "body.summary", "body.start.dateTime", "body.attendees.0.email"]
    assert event.required == ("calendarId",)  # fields of an optional object are optional
    link = views(LINK).get("createPaymentLink")
    assert set(link.required) == {"body.amount.currency", "body.amount.value", "body.reference"}
    plain = ToolCatalog.from_openai([function("ping", "Ping.", {"host": {"type": "string"}}, ["host"])])
    assert flat_catalog(plain) is plain  # nothing to flatten: the catalog itself


def test_a_written_field_brings_the_fields_its_objects_require() -> None:
    refund = views(REFUND).get("refundPayment")
    assert siblings(refund, "amount.value") == ["amount.currency"]
    assert siblings(refund, "device.os") == []  # nothing in `device` is required


def test_flat_arguments_are_nested_back_as_the_catalog_declares_them() -> None:
    args = {"calendarId": "primary", "body.summary": "Review", "body.start.dateTime": "2027-03-03T10:00:00Z",
            "body.attendees.0.email": "a@x.io", "body.location": None}  # fmt: skip
    assert nest_args(args) == {
        "calendarId": "primary",
        "body": {
            "summary": "Review",
            "start": {"dateTime": "2027-03-03T10:00:00Z"},
            "attendees": [{"email": "a@x.io"}],
        },
    }
    catalog = views(LINK)
    plan = nest_plan({"nodes": [{"id": "n1", "tool": "createPaymentLink", "args": {}}]}, catalog)
    assert plan["nodes"][0]["args"] == {"body": {"amount": {}}}  # required objects are written even when empty


def test_demonstrations_are_flattened_to_transfer_field_by_field() -> None:
    demo = Demonstration("Add 'Review' to my calendar", {"nodes": [{"id": "n1", "tool": "insertEvent", "args": {
        "calendarId": "primary", "body": {"summary": "Review", "attendees": [{"email": "a@x.io"}]}}}]})  # fmt: skip
    flat = flat_demo(demo, views(EVENT))
    assert flat.plan["nodes"][0]["args"] == {
        "calendarId": "primary",
        "body.summary": "Review",
        "body.attendees.0.email": "a@x.io",
    }


# money -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("request_text", "money"),
    [
        ("Refund 25.50 EUR of payment PAY-1", Money(25.5, "EUR")),
        ("Refund $120 on payment PAY-1", Money(120.0, "USD")),
        ("为支付 PAY-1 退款 88 元人民币", Money(88.0, "CNY")),
        ("Charge 10 euros", Money(10.0, "EUR")),
    ],
)
def test_money_is_a_number_with_its_currency_next_to_it(request_text: str, money: Money) -> None:
    assert money_in(extract(request_text, TODAY), None) == [money]


def test_an_amount_object_takes_the_code_and_the_number_in_its_declared_unit() -> None:
    refund = views(REFUND).get("refundPayment")
    options = NodeEvidence(extract("Refund 25.50 EUR of payment PAY-1, reference RF-1", TODAY), None, []).node(refund)
    assert options["amount.currency"].values == ("EUR",) and options["amount.value"].values == (2550,)
    assert options["reference"].values == ("RF-1",)
    assert not options["device.reference"].supported  # tied as strongly to a shallower field: not this one
    assert in_declared_unit(Money(1500.0, "JPY"), AMOUNT["properties"]["value"]) == 1500  # no minor units
    assert in_declared_unit(Money(2.5, "EUR"), {"type": "integer"}) is None  # never rounded


def test_a_body_argument_is_offered_field_by_field_and_the_plan_validates_nested() -> None:
    llm = FakePlannerLLM('{"body.amount.currency": "EUR", "body.amount.value": 15000, "body.reference": "ORD-7"}')
    config = PlannerConfig(
        today=TODAY, skeleton_agree_score=None, skeleton_min_score=None, skeleton_repeat_score=None, max_retries=0
    )
    catalog = ToolCatalog.from_openai([LINK])
    svc = PlannerService.from_config(config, llm=llm, catalog=catalog, embedder=EMBEDDER[0])
    result = asyncio.run(svc.plan("Create a payment link for 150 EUR for order ORD-7", tenant="t", cache_salt="s"))
    offered = result.attempts[0].grammars[0]["properties"]
    assert offered["body.amount.currency"] == {"enum": ["EUR"]} and offered["body.amount.value"] == {"enum": [15000]}
    assert result.path == "model" and result.plan is not None
    assert not llm.history and result.attempts[0].forced == 1  # every field decided: written without the engine
    assert result.plan.node("n1").args == {
        "body": {"amount": {"currency": "EUR", "value": 15000}, "reference": "ORD-7"}
    }
    assert flat_tool(catalog.get("createPaymentLink")) is not catalog.get("createPaymentLink")


def test_a_required_list_of_objects_stays_whole() -> None:
    items = {"type": "array", "items": {"type": "object", "properties": {"item": {"type": "string"}}}}
    tool = ToolCatalog.from_openai([function("discount", "Discount items.", {"discounts": items}, ["discounts"])])
    assert flat_catalog(tool).get("discount").properties == {"discounts": items}  # one item cannot be promised


def test_digits_alone_after_phone_number_are_a_phone_number() -> None:
    sms = function("send_sms", "Send an SMS.", {"phone_number": {"type": "string"}, "message": {"type": "string"}},
                   ["phone_number", "message"])  # fmt: skip
    options = NodeEvidence(extract("Text 'hi' to the phone number 1234567890", TODAY), None, []).node(
        ToolCatalog.from_openai([sms]).get("send_sms")
    )
    assert options["phone_number"].values == ("1234567890",) and options["phone_number"].missing is None


def test_the_generic_fallback_returns_the_plan_nested_and_writes_no_optional_default() -> None:
    flags = {"locked": {"type": "boolean", "default": False}, "visibility": {"type": "string",
             "enum": ["default", "public"], "default": "default"}}  # fmt: skip
    link = function("createPaymentLink", "Create a payment link.", {
        "body": {**LINK["function"]["parameters"]["properties"]["body"], "properties": {
            **LINK["function"]["parameters"]["properties"]["body"]["properties"], **flags}}}, ["body"])  # fmt: skip
    config = PlannerConfig(today=TODAY, skeleton_agree_score=None, skeleton_min_score=None, skeleton_repeat_score=None, max_retries=0,
                           tool_choice="model")  # the model's tool call is unreadable: the fallback plans  # fmt: skip
    svc = PlannerService.from_config(config, llm=FakePlannerLLM("{"), catalog=ToolCatalog.from_openai([link]),
                                     embedder=EMBEDDER[0])  # fmt: skip
    result = asyncio.run(svc.plan("Create a payment link for 150 EUR for order ORD-7", tenant="t", cache_salt="s"))
    assert result.path == "fallback" and result.plan is not None
    args = result.plan.node("n1").args
    assert set(args) == {"body"} and args["body"]["amount"]["currency"] == "EUR"  # nested as declared
    assert not set(args["body"]) & set(flags)  # the service's own defaults apply
