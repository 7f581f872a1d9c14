"""Name and value fit beside the embedding (planner/fit.py) and the identifier a description names
(planner/lookups.py), on real catalog shapes: camelCase and route-generated ids, nested request bodies,
a flattened body id. Model-free: the HashingEmbedder (or no embedder at all)."""

from __future__ import annotations

import asyncio
import re
from datetime import date
from typing import Any

import numpy as np

from planner.catalog import ToolCatalog
from planner.config import SelectionConfig
from planner.fit import name_fit, names_a_parameter, option_fit, parameter_fit, taken_kinds, value_fit
from planner.lexicon import lexicon
from planner.lookups import described_entity, producers
from planner.selection import ToolSelector
from planner.similarity import CachedEmbedder, HashingEmbedder
from planner.steps import Step
from planner.values import extract
from tests.planner.real_catalogs import EVENT_BODY

TODAY = date(2026, 12, 1)


def fn(name: str, description: str, props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    parameters = {"type": "object", "properties": props, "required": required or []}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def whole(request: str) -> list[Step]:
    return [Step(request, 0, len(request), False)]


ROUTES = ToolCatalog.from_openai(
    [
        fn("getRoute", "Compute a route between points.", {"origin": {"type": "string"}}, ["origin"]),
        fn("getTrafficRoute", "Compute a route between points.", {"origin": {"type": "string"}}, ["origin"]),
    ]
)


def test_a_name_word_the_request_never_writes_counts_against_the_tool() -> None:
    request = "Driving route from 48.85,2.35 to 45.76,4.83"
    fit = name_fit(request, whole(request), ROUTES)
    assert fit[0, 0] > fit[0, 1]  # `traffic` is a claim the request does not make
    assert fit[0, 0] > 0  # the candidate with the fewest unsaid words pays nothing, keeps its name-word bonus
    said = "Route from 48.85,2.35 to 45.76,4.83 through today's traffic"
    assert name_fit(said, whole(said), ROUTES)[0, 1] >= name_fit(said, whole(said), ROUTES)[0, 0]


def test_a_verb_meets_the_noun_a_tool_is_named_for() -> None:
    """"announce" writes `announcements` of `courses_announcements_create`, not `courses_topics_create`."""
    catalog = ToolCatalog.from_openai([
        fn("courses_announcements_create", "Creates a post.", {"text": {"type": "string"}}),
        fn("courses_topics_create", "Creates a post.", {"text": {"type": "string"}}),
    ])  # fmt: skip
    scores = name_fit("announce 'Lab at noon'", whole("announce 'Lab at noon'"), catalog)
    assert scores[0, 0] > scores[0, 1]


def test_a_quoted_text_that_is_posted_is_the_message_a_tool_is_named_for() -> None:
    """"Post 'Your order has shipped' in conversation CH…": "post" creates, and its quoted object is
    content, so `CreateConversationMessage` claims nothing unsaid; `UpdateConversation` still claims
    "update". A quoted title after a verb that does not write content ("Add 'Q3 review'") says no message."""
    catalog = ToolCatalog.from_openai([
        fn("CreateConversationMessage", "Add a new message to the conversation.", {"Body": {"type": "string"}}),
        fn("UpdateConversation", "Update an existing conversation.", {"State": {"type": "string"}}),
    ])  # fmt: skip
    request = "Post 'Your order has shipped' in conversation CH1b2c3d4e5f6"
    scores = name_fit(request, whole(request), catalog)
    assert scores[0, 0] > scores[0, 1]
    title = "Add 'Q3 review' in conversation CH1b2c3d4e5f6"
    unsaid = name_fit(title, whole(title), catalog)
    # "message" is unsaid there: the create tool's lead over the update tool shrinks by what it pays for it
    assert unsaid[0, 0] - unsaid[0, 1] < scores[0, 0] - scores[0, 1]


def test_an_unsaid_verb_counts_more_than_the_route_method_of_a_generated_id() -> None:
    sends = ToolCatalog.from_openai(
        [
            fn("ScheduleSingleSend", "Schedule a single send.", {"send_at": {"type": "string"}}),
            fn("CreateSingleSend", "Create a single send.", {"send_at": {"type": "string"}}),
        ]
    )
    request = "Create a single send called 'Digest'"
    fit = name_fit(request, whole(request), sends)
    assert fit[0, 1] > fit[0, 0]
    refunds = ToolCatalog.from_openai(
        [
            fn(
                "post-payments-paymentPspReference-refunds",
                "Refund a payment.",
                {"paymentPspReference": {"type": "string"}, "amount": {"type": "integer"}},
                ["paymentPspReference"],
            ),
            fn("patch-paymentLinks-linkId", "Update a payment link.", {"linkId": {"type": "string"}}, ["linkId"]),
        ]
    )
    request = "Refund the payment 7712093847562091"
    fit = name_fit(request, whole(request), refunds)
    # `post` starts a route's id and `paymentPspReference` is its path parameter: neither is a claim
    assert fit[0, 0] > fit[0, 1]
    hooks = ToolCatalog.from_openai([
        fn("postWebhook", "Create a webhook.", {"endpoint": {"type": "string"}}),
        fn("getTeamProjects", "List a team's projects.", {"team_id": {"type": "string"}}),
    ])  # fmt: skip
    request = "Set up a webhook that gets called for team 77"
    fit = name_fit(request, whole(request), hooks)
    assert fit[0, 0] >= fit[0, 1]  # `post` of camelCase `postWebhook` is the HTTP method, not a claim


def test_a_step_naming_an_option_of_a_tools_enum_fits_that_tool() -> None:
    actions = ToolCatalog.from_openai([
        fn("runServerAction", "Run an action.", {"type": {"type": "string", "enum": ["reboot", "power_cycle", "snapshot"]}}),
        fn("getServerAction", "Read an action.", {"action_id": {"type": "string"}}),
    ])  # fmt: skip
    request = "Take a snapshot of server 42"
    fit = option_fit(request, whole(request), actions)
    assert fit[0, 0] > fit[0, 1] and option_fit("Show server 42", whole("Show server 42"), actions)[0, 0] == 0
    zh = "给服务器 42 拍个快照"  # read through the glossary
    assert option_fit(zh, whole(zh), actions)[0, 0] > 0


def test_an_option_of_an_array_of_enum_values_fits_that_tool() -> None:
    """An array parameter whose items are enum values (`acquireMethod: ["PURCHASED"]`) offers those options."""
    shelves = ToolCatalog.from_openai([
        fn("listMyBooks", "List my books.", {"acquireMethod": {"type": "array", "items": {"type": "string", "enum": ["PURCHASED", "RENTED"]}}}),
        fn("listVolumes", "List volumes.", {"q": {"type": "string"}}),
    ])  # fmt: skip
    request = "List the books I purchased"
    assert option_fit(request, whole(request), shelves)[0, 0] > option_fit(request, whole(request), shelves)[0, 1]


def test_a_step_writing_a_parameter_s_whole_name_fits_the_tool_that_has_it() -> None:
    """"Change the time zone of calendar X": the calendars tool has `timeZone`, the access-rule tool beside it
    does not. A word only part of a name says (`timeMin`), a one-word name (`summary`: ordinary speech) and a
    word every candidate has (`calendarId` beside `calendars_patch`) do not count; at most
    `parameter_names_counted` names count per tool."""
    text = {"type": "string"}
    calendars = ToolCatalog.from_openai([
        fn("calendars_patch", "Update a calendar.", {"calendarId": text, "timeZone": text, "summary": text,
                                                     "backgroundColor": text, "foregroundColor": text}, ["calendarId"]),
        fn("acl_patch", "Update an access rule.", {"calendarId": text, "ruleId": text, "sendNotifications": text},
           ["calendarId", "ruleId"]),
        fn("events_list", "List events.", {"calendarId": text, "timeMin": text}),
    ])  # fmt: skip
    request = "Change the time zone of calendar team@example.com to Asia/Tokyo"
    fit = parameter_fit(request, whole(request), calendars)
    assert fit[0, 0] > 0 and fit[0, 1] == fit[0, 2] == 0
    earlier = ToolCatalog.from_openai([  # a word an earlier parameter has (`timeMin`) is still timeZone's
        fn("calendars_patch", "Update a calendar.", {"timeMin": text, "timeZone": text}),
        fn("acl_patch", "Update an access rule.", {"ruleId": text}),
    ])  # fmt: skip
    assert parameter_fit(request, whole(request), earlier)[0, 0] > 0
    for said in ("Change calendar team@example.com", "Change the summary of calendar X", "Show events from that time on"):
        assert not parameter_fit(said, whole(said), calendars).any(), said
    many = "Set the time zone, the background color and the foreground color of calendar X and send notifications"
    counted = parameter_fit(many, whole(many), calendars)[0]
    assert counted[0] == 2 * counted[1] > 0 and counted[2] == 0  # three names, two counted, against one


def test_an_option_offered_by_one_branch_of_a_composed_body_fits_that_tool() -> None:
    """A body that is one of several shapes (DigitalOcean's droplet actions: `oneOf` reboot, resize,
    snapshot…, each with its own `type` enum) offers every branch's options; branches deeper than the
    nesting bound are not read."""
    branch = {"type": "object", "properties": {"type": {"type": "string", "enum": ["snapshot"]}, "name": {"type": "string"}}}
    other = {"type": "object", "properties": {"type": {"type": "string", "enum": ["reboot"]}}}
    read = fn("get_droplet_action", "Retrieve an existing droplet action.", {"action_id": {"type": "string"}})
    composed = fn("post_droplet_action", "Initiate a droplet action.", {"body": {"oneOf": [other, {"allOf": [branch]}]}})
    actions = ToolCatalog.from_openai([composed, read])
    request = "Take a snapshot of droplet 42"
    fit = option_fit(request, whole(request), actions)
    assert fit[0, 0] > fit[0, 1]
    assert option_fit("Reboot droplet 42", whole("Reboot droplet 42"), actions)[0, 0] > 0
    deep: dict[str, Any] = branch
    for _ in range(3):
        deep = {"anyOf": [deep]}
    buried = ToolCatalog.from_openai([fn("post_droplet_action", "Initiate.", {"body": deep}), read])
    assert option_fit(request, whole(request), buried)[0, 0] == 0


def test_a_chinese_playback_request_is_read_through_its_glosses() -> None:
    """"把音量调到 75%" writes volume and set through the glossary: the volume tool, not the repeat mode."""
    player = ToolCatalog.from_openai([
        fn("set_volume_for_users_playback", "Set the volume for the user's current playback device.",
           {"volume_percent": {"type": "integer"}}, ["volume_percent"]),
        fn("set_repeat_mode_on_users_playback", "Set the repeat mode for the user's playback.",
           {"state": {"type": "string", "enum": ["track", "context", "off"]}}, ["state"]),
    ])  # fmt: skip
    request = "把音量调到 75%"
    fit = name_fit(request, whole(request), player)
    assert fit[0, 0] > fit[0, 1]
    repeat = "单曲循环"
    assert name_fit(repeat, whole(repeat), player)[0, 1] > name_fit(repeat, whole(repeat), player)[0, 0]


def test_two_written_words_match_one_compound_name_word() -> None:
    lists = ToolCatalog.from_openai(
        [
            fn("tasks_tasklists_insert", "Creates a new task list.", {"title": {"type": "string"}}),
            fn("tasks_tasks_move", "Moves a task.", {"task": {"type": "string"}}),
        ]
    )
    request = "Create a task list called 'Move house'"
    fit = name_fit(request, whole(request), lists)
    assert fit[0, 0] > fit[0, 1]


def test_a_chinese_request_is_read_through_its_glosses() -> None:
    request = "为支付 7712093847562091 退款 88 元"
    refunds = ToolCatalog.from_openai(
        [
            fn("createRefund", "Refund.", {"amount": {"type": "number"}}),
            fn("createCapture", "Capture.", {"amount": {"type": "number"}}),
        ]
    )
    fit = name_fit(request, whole(request), refunds)
    assert fit[0, 0] > fit[0, 1]


EVENTS = fn(
    "calendar_events_insert",
    "Creates an event.",
    {"calendarId": {"type": "string"}, "body": EVENT_BODY},
    ["calendarId"],
)
CALENDARS = fn(
    "calendar_calendars_insert",
    "Creates a secondary calendar.",
    {"body": {"type": "object", "properties": {"summary": {"type": "string"}, "timeZone": {"type": "string"}}}},
)


def test_a_tool_whose_nested_parameters_take_the_steps_dates_fits_it_better() -> None:
    catalog = ToolCatalog.from_openai([CALENDARS, EVENTS])
    assert taken_kinds(catalog.get("calendar_events_insert")) >= {"date", "datetime", "time", "email"}
    assert not taken_kinds(catalog.get("calendar_calendars_insert")) & {"date", "email"}
    request = "Add 'Quarterly review' to my calendar on March 3, 2027 from 10:00 to 11:00 UTC."
    fit = value_fit(extract(request, TODAY), whole(request), catalog)
    assert fit[0, 1] > fit[0, 0] == 0.0
    plain = "Add a calendar called 'Team'"
    assert not np.any(value_fit(extract(plain, TODAY), whole(plain), catalog))


def test_a_step_naming_a_parameter_of_the_tool_before_it_joins_that_call() -> None:
    catalog = ToolCatalog.from_openai([CALENDARS, EVENTS])
    request = "Block 16:00 to 16:30 on 2027-01-19 for 'Call' and add priya@example.com as an attendee"
    step = Step("add priya@example.com as an attendee", request.index("add"), len(request), False)
    assert names_a_parameter(request, step, catalog.get("calendar_events_insert"))
    again = Step("add an event 'Lunch'", 0, 20, False)
    assert not names_a_parameter("add an event 'Lunch'", again, catalog.get("calendar_events_insert"))

    async def select() -> list[str]:
        selector = ToolSelector(CachedEmbedder(HashingEmbedder()), SelectionConfig(step_min=0.0))
        selection = await selector.select(request, catalog, limit=6, values=extract(request, TODAY))
        return selection.sequence

    assert asyncio.run(select()).count("calendar_events_insert") == 1


def test_an_identifier_named_only_by_its_description_gets_the_lookup_of_that_thing() -> None:
    lex = lexicon("en")

    def entity(text: str) -> list[str]:
        return described_entity(re.findall(r"\w+", text), lex)

    assert entity("The unique identifier for the company which is given by Intercom") == ["company"]
    assert entity("The id of a contact") == ["contact"]
    assert entity("Free text") == []
    catalog = ToolCatalog.from_openai(
        [
            fn(
                "attachContactToACompany",
                "Attach a contact to a company.",
                {"body_id": {"type": "string", "description": "The unique identifier for the company."}},
                ["body_id"],
            ),
            fn("retrieveCompany", "Retrieve companies by name.", {"name": {"type": "string"}}),
            fn("listTags", "List all tags.", {}),
        ]
    )
    found = producers(catalog.get("attachContactToACompany"), "body_id", catalog)
    assert [p.tool for p in found][:1] == ["retrieveCompany"]


def test_a_request_noun_names_the_api_noun_it_is_a_synonym_of() -> None:
    """"meeting" names `events` (the lexicon's `noun_synonyms`), "mark … as complete" an update: the tool
    named for what the request says with other words is not charged for words it never writes."""
    catalog = ToolCatalog.from_openai([
        fn("calendar_events_patch", "Updates an event.", {"eventId": {"type": "string"}}, ["eventId"]),
        fn("calendar_calendars_patch", "Updates a calendar.", {"calendarId": {"type": "string"}}, ["calendarId"]),
    ])  # fmt: skip
    request = "Change the location of my 'Budget sync' meeting to Room 4B."
    fit = name_fit(request, whole(request), catalog)
    assert fit[0, 0] > fit[0, 1]
    tasks = ToolCatalog.from_openai([
        fn("updateTask", "Update a task.", {"task_gid": {"type": "string"}}, ["task_gid"]),
        fn("getTask", "Get a task.", {"task_gid": {"type": "string"}}, ["task_gid"]),
    ])  # fmt: skip
    done = "Mark 'Draft Q1 newsletter' as complete."
    assert name_fit(done, whole(done), tasks)[0, 0] > name_fit(done, whole(done), tasks)[0, 1]
    places = ToolCatalog.from_openai([
        fn("localitiesNearby", "Nearby points of interest.", {"location": {"type": "string"}}, ["location"]),
        fn("localitiesDetails", "Details of a locality.", {"public_id": {"type": "string"}}, ["public_id"]),
    ])  # fmt: skip
    near = "Show me 5 cinemas near 48.8584,2.2945."
    assert name_fit(near, whole(near), places)[0, 0] > name_fit(near, whole(near), places)[0, 1]
