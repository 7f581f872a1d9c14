"""Lookups for identifiers that real catalogs nest, name by description only, or that a request gives
beside other identifiers, on invented catalogs of those shapes (no API's text): the selection's lookups and
gaps and the evidence's options are checked directly (fast unit tests; no engine, no fake model)."""

from __future__ import annotations

from datetime import date
from typing import Any

from planner.catalog import ToolCatalog, output_fields
from planner.config import SelectionConfig
from planner.evidence import NodeEvidence
from planner.flat_args import flat_catalog
from planner.lookup_seeds import lookup_seed
from planner.lookups import producers
from planner.prerequisites import Gap, literal_for, with_prerequisites
from planner.upstream import Upstream
from planner.values import extract
from tests.planner import real_catalogs as rc

TODAY = date(2026, 12, 1)
TEXT = {"type": "string"}


def _plan(catalog: ToolCatalog, tool: str, request: str) -> tuple[list[str], list[Any], list[Gap]]:
    values = extract(request, TODAY)
    sequence, lookups, _, gaps = with_prerequisites([tool], [None], catalog, catalog, SelectionConfig(), values)
    return sequence, lookups, gaps


# a video search whose results identify each hit by an object of ids (`id.videoId`, `id.channelId`), and
# write operations that take such an id inside nested request bodies with no `required` list
_RESULT_ID = {
    "type": "object",
    "properties": {"kind": TEXT, "videoId": TEXT, "channelId": TEXT, "playlistId": TEXT},
}
VIDEOS = [
    rc.function(
        "media_search_list",
        "Searches videos, channels and playlists.",
        {"q": {**TEXT, "description": "Textual search terms to match."}, "maxResults": {"type": "integer"}},
        [],
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"id": _RESULT_ID, "title": TEXT}},
                },
                "nextPageToken": TEXT,
            },
        },
    ),
    rc.function(
        "media_subscriptions_insert",
        "Adds a subscription for the authenticated user's channel.",
        {
            "snippet": {
                "type": "object",
                "properties": {
                    "channelId": {**TEXT, "description": "The ID of the subscriber's channel."},
                    "resourceId": {
                        "type": "object",
                        "properties": {
                            "kind": TEXT,
                            "channelId": {**TEXT, "description": "The ID of the channel subscribed to."},
                        },
                    },
                },
            },
            "subscriberSnippet": {
                "type": "object",
                "properties": {"channelId": {**TEXT, "description": "The channel ID of the subscriber."}},
            },
        },
        [],
        {"type": "object", "properties": {"id": TEXT}},
    ),
]


def test_an_identifier_an_output_gives_as_an_object_of_ids_is_referencable_one_level_deeper() -> None:
    schema = VIDEOS[0]["function"]["output_schema"]
    paths = dict(output_fields(schema))
    assert {"items.0.id.videoId", "items.0.id.channelId", "items.0.id.playlistId"} <= set(paths)
    assert "items.0.id.kind" not in paths  # only the identifiers of an identifier object, not its other fields
    deep = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {
        "owner": {"type": "object", "properties": {"id": TEXT, "name": TEXT}}}}}}}  # fmt: skip
    assert "items.0.owner.id" not in dict(output_fields(deep))  # an object that is no identifier stays closed


def test_a_nested_optional_identifier_the_request_names_is_looked_up_by_its_own_field_name() -> None:
    catalog = flat_catalog(ToolCatalog.from_openai(VIDEOS))
    tool = catalog.get("media_subscriptions_insert")
    found = producers(tool, "snippet.resourceId.channelId", catalog)
    assert found and found[0].tool == "media_search_list" and found[0].path == "items.0.id.channelId"
    sequence, lookups, _ = _plan(catalog, "media_subscriptions_insert", "Subscribe me to the Kurzgesagt channel.")
    assert sequence == ["media_search_list", "media_subscriptions_insert"]
    assert [(lk.path, lk.seed) for lk in lookups] == [("items.0.id.channelId", "Kurzgesagt")]


def test_two_optional_identifiers_of_one_thing_are_no_twins_one_lookup_fills_one() -> None:
    """Three optional `channelId` fields (the subscriber's, the one subscribed to, …): the lookup's result
    goes to the field the lookup was planned for, not to all three."""
    catalog = flat_catalog(ToolCatalog.from_openai(VIDEOS))
    tool = catalog.get("media_subscriptions_insert")
    request = "Subscribe me to the Kurzgesagt channel."
    _, lookups, _ = _plan(catalog, "media_subscriptions_insert", request)
    links = {lk.arg: (f"$n1.{lk.path}",) for lk in lookups}
    upstream = [Upstream("n1", catalog.get("media_search_list"), {"q": "Kurzgesagt"})]
    options = NodeEvidence(extract(request, TODAY), None, upstream, links).node(tool)
    referenced = [arg for arg, o in options.items() if o.refs]
    assert referenced == list(links)


TASKS = [
    rc.function(
        "todo_tasklists_list",
        "Returns the authenticated user's task lists.",
        {"pageToken": {**TEXT, "description": "Token of the result page to return."}},
        [],
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"id": {**TEXT, "description": "Task list identifier."}, "title": TEXT},
                    },
                }
            },
        },  # fmt: skip
    ),
    rc.function(
        "todo_lists_search",
        "Finds task lists by title.",
        {"title": {**TEXT, "description": "Text the list's title contains."}},
        ["title"],
        {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {"id": TEXT, "title": TEXT}}}
            },
        },  # fmt: skip
    ),
    rc.function(
        "todo_tasks_insert",
        "Creates a new task on the specified task list.",
        {
            "taskListId": {**TEXT, "description": "Task list identifier."},
            "title": {**TEXT, "description": "Title of the task."},
            "parent": {**TEXT, "description": "Parent task identifier. Omitted for a top-level task."},
        },
        ["taskListId"],
        {"type": "object", "properties": {"id": TEXT}},
    ),
]


def test_a_compound_written_as_one_word_finds_the_tool_named_with_it() -> None:
    """`taskListId` is returned by the tool named for task lists in one word (`tasklists`)."""
    catalog = ToolCatalog.from_openai(TASKS[:1] + TASKS[2:])
    found = producers(catalog.get("todo_tasks_insert"), "taskListId", catalog)
    assert [(p.tool, p.path) for p in found] == [("todo_tasklists_list", "items.0.id")]


def test_a_listing_lookup_for_a_container_the_request_names_is_a_gap_a_search_is_a_lookup() -> None:
    """ "my Groceries list": a list of every task list cannot be asked for Groceries (its first item would
    be a guess: the user must say which); a search by title can, and is seeded with the list's name, not
    the new task's quoted title."""
    request = "Add 'Buy milk' to my Groceries list."
    listing = ToolCatalog.from_openai(TASKS[:1] + TASKS[2:])
    sequence, _, gaps = _plan(listing, "todo_tasks_insert", request)
    assert sequence == ["todo_tasks_insert"] and [g.arg for g in gaps] == ["taskListId"]
    search = ToolCatalog.from_openai(TASKS[1:])
    seed = lookup_seed(
        search.get("todo_tasks_insert"),
        "taskListId",
        extract(request, TODAY),
        None,
        set(),
        search.get("todo_lists_search"),
    )
    assert seed == "Groceries"


CONTACTS = [
    rc.function(
        "contacts_search",
        "Search contacts by the value of their attributes.",
        {"query": {**TEXT, "description": "Text matched against the contacts' names and e-mail addresses."}},
        [],
        {
            "type": "object",
            "properties": {
                "data": {"type": "array", "items": {"type": "object", "properties": {"id": TEXT, "email": TEXT}}}
            },
        },  # fmt: skip
    ),
    rc.function(
        "contacts_tag",
        "Add a tag to a contact.",
        {
            "contact_id": {
                **TEXT,
                "description": "The unique identifier for the contact. Example: 63a07ddf05a3.",
                "examples": ["63a07ddf05a3"],
            },
            "id": {**TEXT, "description": "The unique identifier for the tag. Example: 7522907."},
        },
        ["contact_id"],
    ),
    rc.function(
        "calendars_events_move",
        "Moves an event to another calendar.",
        {
            "eventId": {**TEXT, "description": "Event identifier."},
            "calendarId": {**TEXT, "description": "Calendar identifier of the target calendar."},
        },
        ["eventId", "calendarId"],
    ),
]


def test_a_code_written_as_another_identifiers_value_is_not_this_ones() -> None:
    """ "with the tag 7522907": the tag's id (an optional `id` the description calls the tag's), not the
    contact's; the contact is found by its address."""
    catalog = ToolCatalog.from_openai(CONTACTS)
    tool = catalog.get("contacts_tag")
    values = extract("Tag the contact omar@fastfreight.com with the tag 7522907.", TODAY)
    assert not literal_for(tool, "contact_id", values, None)
    assert literal_for(tool, "id", values, None)
    sequence, lookups, _ = _plan(catalog, "contacts_tag", "Tag the contact omar@fastfreight.com with the tag 7522907.")
    assert sequence == ["contacts_search", "contacts_tag"] and lookups[0].seed == "omar@fastfreight.com"


def test_an_address_written_after_the_thing_the_description_names_is_that_identifier() -> None:
    """ "to the calendar team@group.example.com": the target calendar's identifier, given; an address is no
    contact id whose examples show another shape."""
    catalog = ToolCatalog.from_openai(CONTACTS)
    move = catalog.get("calendars_events_move")
    values = extract("Move event evt-20417 to the calendar team@group.example.com.", TODAY)
    assert literal_for(move, "calendarId", values, None)
    tag = catalog.get("contacts_tag")
    assert not literal_for(tag, "contact_id", extract("Tag the contact omar@fastfreight.com.", TODAY), None)
