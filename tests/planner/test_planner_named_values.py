"""How a request names things on a real API's catalog: "the segment 'VIP'" names the segment, "to the company
Globex" asks for the company's identifier (a lookup), a contact found by its e-mail through a filter object.
Invented catalogs of the shapes real APIs have (no API's text); the scripted fake model stands in for the
engine — these tests check what the planner offers it."""

from __future__ import annotations

import asyncio
import json
from datetime import date
from typing import Any

import pytest

from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.evidence import NodeEvidence
from planner.query_filters import filter_object, filter_value
from planner.service import PlannerService
from planner.similarity import CachedEmbedder
from planner.values import extract
from tests.fakes.llm import FakePlannerLLM
from tests.planner.real_catalogs import function

TODAY = date(2026, 11, 30)

FILTER = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "field": {"type": "string", "description": "The field to search on."},
                "operator": {"type": "string", "enum": ["=", "!=", "~", "<", ">"]},
                "value": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            },
        },
        {"type": "object", "properties": {"operator": {"type": "string", "enum": ["AND", "OR"]}, "value": {}}},
    ]
}
LIST_OF_IDS = {
    "type": "object",
    "properties": {"data": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}}},
}
CRM = [
    function(
        "findContacts",
        "Search contacts with one condition.",
        {"query": FILTER, "per_page": {"type": "integer"}},
        [],
        LIST_OF_IDS,
    ),  # fmt: skip
    function(
        "lookupCompany",
        "Retrieve companies by name or company_id.",
        {
            "name": {"type": "string", "description": "The name of the company."},
            "company_id": {"type": "string", "description": "The company_id of the company."},
        },
        [],
        LIST_OF_IDS,
    ),  # fmt: skip
    function(
        "linkContactToCompany",
        "Attach a contact to a company.",
        {
            "id": {"type": "string", "description": "The unique identifier for the contact."},
            "body_id": {"type": "string", "description": "The unique identifier for the company."},
        },
        ["id"],
    ),  # fmt: skip
    function(
        "updateContact",
        "Update a contact.",
        {
            "id": {"type": "string", "description": "The unique identifier for the contact."},
            "phone": {"type": "string", "description": "The contact's phone number."},
        },
        ["id"],
    ),  # fmt: skip
]
MAIL = [
    function(
        "segments_create",
        "Create a new segment",
        {
            "name": {"type": "string", "description": "The name of the segment."},
            "filter": {"type": "object", "description": "Filter conditions."},
        },
        [],
    ),  # fmt: skip
    function(
        "emails_send",
        "Send an email",
        {
            "from": {"type": "string", "description": "Sender email address."},
            "to": {"type": "string", "description": "Recipient email address."},
            "subject": {"type": "string"},
            "text": {"type": "string"},
        },
        [],
    ),  # fmt: skip
    function(
        "domains_create",
        "Create a new domain",
        {
            "name": {"type": "string", "description": "The name of the domain."},
            "region": {"type": "string", "enum": ["us-east-1", "eu-west-1"]},
        },
        [],
    ),  # fmt: skip
]
CALENDAR = [
    function(
        "events_insert",
        "Creates an event.",
        {
            "calendarId": {"type": "string", "description": 'Calendar identifier. Use the "primary" keyword.'},
            "summary": {"type": "string"},
        },
        ["calendarId"],
    ),  # fmt: skip
]
EMBEDDER: list[CachedEmbedder] = []


@pytest.fixture(autouse=True)
def _embedder(minilm: CachedEmbedder) -> None:
    EMBEDDER[:] = [minilm]


def options_of(tools: list[dict[str, Any]], tool: str, request: str) -> Any:
    return NodeEvidence(extract(request, TODAY), None, []).node(ToolCatalog.from_openai(tools).get(tool))


def plan(llm: FakePlannerLLM, request: str, tools: list[dict[str, Any]]) -> Any:
    config = PlannerConfig(today=TODAY, skeleton_agree_score=None, skeleton_min_score=None, skeleton_repeat_score=None)
    svc = PlannerService.from_config(config, llm=llm, catalog=ToolCatalog.from_openai(tools), embedder=EMBEDDER[0])
    return asyncio.run(svc.plan(request, tenant="acme", cache_salt="salt", tools=tools))


# names ------------------------------------------------------------------------------------------------
def test_the_thing_a_tool_acts_on_names_its_name_argument() -> None:
    segment = options_of(MAIL, "segments_create", "Create a segment 'VIP customers' for our best buyers")
    assert segment["name"].values == ("VIP customers",)
    domain = options_of(MAIL, "domains_create", "Register the domain send.shop.io")
    assert domain["name"].values == ("send.shop.io",)  # a bare host name is a value of the request too
    # the verb use of the word names no e-mail: the address is the recipient, not the subject
    mail = options_of(MAIL, "emails_send", "Email ana@example.com from billing@acme.io with the subject 'Hi'")
    assert mail["to"].values == ("ana@example.com",) and mail["subject"].values == ("Hi",)


def test_a_capital_that_only_starts_a_sentence_is_no_name() -> None:
    phrases = [c.value for c in extract("Look up Brighton in the UK. Block 16:00 for New York.", TODAY).candidates
               if c.kind == "phrase"]  # fmt: skip
    assert "Look" not in phrases and "Block" not in phrases
    assert {"Brighton", "UK", "New York"} <= set(phrases)


def test_a_date_is_never_an_identifier() -> None:
    options = options_of(CALENDAR, "events_insert", "Block 16:00 to 16:30 UTC on 2027-01-19 in my calendar")
    assert options["calendarId"].values == ("primary",)  # the description's keyword, not "2027-01-19"


# lookups ----------------------------------------------------------------------------------------------
def test_an_optional_identifier_whose_thing_the_request_names_is_looked_up() -> None:
    llm = FakePlannerLLM()
    result = plan(llm, "Link the contact maria@globex.com to the company Globex Corporation", CRM)
    assert result.selection["proposed"] == ["findContacts", "lookupCompany", "linkContactToCompany"]
    seeds = {lk["arg"]: lk["seed"] for lk in result.selection["lookups"]}
    assert seeds == {"id": "maria@globex.com", "body_id": "Globex Corporation"}
    # the request naming no company: the optional identifier is left out, nothing is looked up for it
    alone = plan(FakePlannerLLM(), "Update the phone of the contact maria@globex.com to +44 20 7946 0018", CRM)
    assert alone.selection["proposed"] == ["findContacts", "updateContact"]


def test_a_lookup_queried_through_a_filter_object_gets_the_filter_that_finds_the_name() -> None:
    assert filter_object(FILTER) == {"field": "field", "operator": "operator", "value": "value"}
    assert filter_object({"type": "object", "properties": {"q": {"type": "string"}}}) is None
    assert filter_value(FILTER, "Globex", None) == {"field": "name", "operator": "=", "value": "Globex"}
    result = plan(FakePlannerLLM(), "Update the phone of the contact jane@acme.io to +44 20 7946 0018", CRM)
    query = result.attempts[0].grammars[0]["properties"]["query"]
    assert {"field": "email", "operator": "=", "value": "jane@acme.io"} in json.loads(json.dumps(query))["enum"]


# spans and titles inside request bodies ------------------------------------------------------------------
WHEN = {"type": "object", "properties": {"dateTime": {"type": "string", "format": "date-time"}}}
AGENDA = [
    function(
        "events_add",
        "Creates an event.",
        {
            "calendarId": {"type": "string", "description": 'Calendar identifier. Use the "primary" keyword.'},
            "body": {
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "description": "Title of the event."},
                    "anyoneCanAddSelf": {"type": "boolean"},
                    "start": WHEN,
                    "end": WHEN,
                    "attendees": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"email": {"type": "string", "description": "The attendee's email address."}},
                        },
                    },
                },
            },
        },
        ["calendarId"],
    ),  # fmt: skip
    function(
        "freebusy",
        "Returns free/busy information.",
        {"timeMin": {"type": "string", "format": "date-time"}, "timeMax": {"type": "string", "format": "date-time"}},
        [],
    ),  # fmt: skip
]


def flat_options(tools: list[dict[str, Any]], tool: str, request: str) -> Any:
    from planner.flat_args import flat_catalog

    view = flat_catalog(ToolCatalog.from_openai(tools)).get(tool)
    return {a: o.values for a, o in NodeEvidence(extract(request, TODAY), None, []).node(view).items() if o.values}


def test_the_clocks_a_role_ties_make_the_two_ends_of_a_span() -> None:
    event = flat_options(AGENDA, "events_add", "Add 'Quarterly review' to my calendar on March 3, 2027 from 10:00 to 11:00 UTC.")  # fmt: skip
    assert event == {
        "calendarId": ("primary",),
        "body.start.dateTime": ("2027-03-03T10:00:00Z",),
        "body.end.dateTime": ("2027-03-03T11:00:00Z",),
        "body.summary": ("Quarterly review",),  # quoted text nothing ties: the title; "Add" names no field
    }
    # a clock no role ties is the other end of the span whose one end is tied ("16:00 to 16:30")
    block = flat_options(AGENDA, "events_add", "Block 16:00 to 16:30 UTC on 2027-01-19 for 'Call with Priya' and add priya@example.com as an attendee.")  # fmt: skip
    assert block["body.start.dateTime"] == ("2027-01-19T16:00:00Z",)
    assert block["body.end.dateTime"] == ("2027-01-19T16:30:00Z",)
    assert block["body.attendees.0.email"] == ("priya@example.com",)
    assert block["calendarId"][0] == "primary"  # the description's keyword before a value merely id-shaped
    busy = flat_options(AGENDA, "freebusy", "Am I free on February 10, 2027 between 09:00 and 12:00 UTC?")
    assert busy == {"timeMin": ("2027-02-10T09:00:00Z",), "timeMax": ("2027-02-10T12:00:00Z",)}


def test_a_stated_offset_is_the_zone_of_the_span_whatever_the_language_and_never_a_clock_of_its_own() -> None:
    # Chinese: the clocks follow 日 and precede 到 with no word boundary between; the offset's "08:00" is no clock
    zh = flat_options(AGENDA, "events_add", "在我的日历上添加“产品评审会”，时间是2027年4月8日15:00到16:00（UTC+08:00）。")  # fmt: skip
    assert zh["body.start.dateTime"] == ("2027-04-08T15:00:00+08:00",)
    assert zh["body.end.dateTime"] == ("2027-04-08T16:00:00+08:00",)
    clocks = [c.value for c in extract("2027年4月8日15:00到16:00（UTC+08:00）", TODAY).candidates if c.kind == "time"]
    assert clocks == ["15:00", "16:00"]
    # an offset right after a clock, bracketed, is the zone too
    end = flat_options(AGENDA, "events_add", "Add 'Launch' on December 24, 2027 from 22:00 to 23:59 (+01:00).")
    assert end["body.end.dateTime"] == ("2027-12-24T23:59:00+01:00",)


# which identifier the request gives, and which lookup can be called --------------------------------------
CARDS = [
    function(
        "getPaymentLink",
        "Get a payment link.",
        {"linkId": {"type": "string"}},
        ["linkId"],
        {"type": "object", "properties": {"cardId": {"type": "string"}, "shopperReference": {"type": "string"}}},
    ),  # fmt: skip
    function(
        "listCards",
        "List the stored cards of a shopper.",
        {"shopperReference": {"type": "string"}},
        ["shopperReference"],
        {
            "type": "object",
            "properties": {
                "cards": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}}
            },
        },
    ),  # fmt: skip
    function(
        "deleteCard",
        "Delete a stored card.",
        {"cardId": {"type": "string"}, "shopperReference": {"type": "string"}},
        ["cardId", "shopperReference"],
    ),  # fmt: skip
]


def test_a_code_another_identifier_claims_is_not_this_ones_and_a_lookup_the_request_can_call_comes_first() -> None:
    from planner.config import SelectionConfig
    from planner.prerequisites import literal_for, needs_lookup

    catalog = ToolCatalog.from_openai(CARDS)
    delete = catalog.get("deleteCard")
    values = extract("Remove the saved card of shopper cust-8841", TODAY)
    assert literal_for(delete, "shopperReference", values, None)
    assert not literal_for(delete, "cardId", values, None)  # "shopper cust-8841" names the shopper
    assert not literal_for(delete, "cardId", extract("Remove card alpha-3 now", TODAY), None)  # one digit: no id
    producer = needs_lookup(delete, "cardId", catalog, SelectionConfig(), values=values)
    assert producer is not None and producer.tool == "listCards"  # getPaymentLink needs a link id nobody gave
    assert needs_lookup(delete, "cardId", catalog, SelectionConfig()).tool == "getPaymentLink"  # (field named alike)


def test_a_plural_stems_as_its_singular() -> None:
    from planner.lexicon import lexicon

    lex = lexicon("en")
    for one, many in (("method", "methods"), ("address", "addresses"), ("status", "statuses"), ("card", "cards")):
        assert lex.stem(one) == lex.stem(many)
    for verb, noun in (("announce", "announcements"), ("invite", "invitations"), ("assign", "assignment")):
        assert lex.stem(verb) == lex.stem(noun)  # the Snowball stemmer: derived forms meet too


NOTES = [
    function(
        "listNotes",
        "Lists the notes in a folder.",
        {"folderId": {"type": "string", "description": 'Folder identifier. Use the "root" keyword for the top folder.'},
         "q": {"type": "string", "description": "Words the notes contain."}},
        ["folderId"],
        {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object",
         "properties": {"id": {"type": "string"}}}}}},
    ),
    function(
        "getFolderPreference",
        "Returns one preference of the user's folders.",
        {"preference": {"type": "string", "description": "The id of the preference."}},
        ["preference"],
        {"type": "object", "properties": {"id": {"type": "string"}, "value": {"type": "string"}}},
    ),
]  # fmt: skip


def test_an_identifier_with_a_keyword_takes_no_lookup_that_itself_needs_an_id_nobody_gives() -> None:
    """Google's `calendarId` shape: the description offers a keyword; a tool that outputs some `id` but needs
    an id of its own the request does not give is no lookup for it (it only moves the question to that id)."""
    from planner.config import SelectionConfig
    from planner.prerequisites import needs_lookup

    catalog = ToolCatalog.from_openai(NOTES)
    notes = catalog.get("listNotes")
    assert needs_lookup(notes, "folderId", catalog, SelectionConfig()) is not None  # an `id` field: a producer
    values = extract("Find notes that mention 'Acme'", TODAY)
    assert needs_lookup(notes, "folderId", catalog, SelectionConfig(), values=values) is None
    values = extract("Find notes that mention 'Acme', preference pref-2041", TODAY)
    assert needs_lookup(notes, "folderId", catalog, SelectionConfig(), values=values) is not None  # callable now


# shapes of values ---------------------------------------------------------------------------------------
DESIGN = [
    function(
        "renderImages",
        "Renders images of nodes of a design file.",
        {"file_key": {"type": "string", "description": "The key of the file to export from."},
         "ids": {"type": "string", "description": "A comma separated list of node IDs to render."},
         "format": {"type": "string", "enum": ["png", "svg", "pdf"]}},
        ["file_key", "ids"],
    ),
    function(
        "listRecords",
        "Lists the DNS records of a zone.",
        {"zone": {"type": "string", "description": "The zone's domain name."},
         "name": {"type": "string", "description": "A fully qualified record name."}},
        ["zone"],
    ),
]  # fmt: skip


def test_a_clock_shaped_value_after_the_word_for_what_an_identifier_identifies_is_that_id() -> None:
    """Figma-style node ids (`12:34`) read as clocks; the description says the argument lists node IDs and
    the request writes "nodes" right before them, so they are its values (joined as its comma list)."""
    images = options_of(DESIGN, "renderImages", "Export nodes 12:34 and 12:35 from file kL9xQ2mWv7TqPz as SVG")
    assert images["ids"].values[0] == "12:34,12:35" and "kL9xQ2mWv7TqPz" not in images["ids"].values
    chinese = options_of(DESIGN, "renderImages", "把文件 Hq3ZtR8pLmN1sV 里的节点 4:17 导出成 PDF")
    assert chinese["ids"].values[0] == "4:17"
    # a clock after another word stays a time: no id of the node
    meeting = options_of(DESIGN, "renderImages", "Export file kL9xQ2mWv7TqPz at 12:34")
    assert "12:34" not in meeting["ids"].values


def test_an_underscored_dns_label_is_part_of_the_host_and_a_later_mention_keeps_its_shape() -> None:
    values = extract("Remove the TXT record _acme-challenge.example.org from the example.org zone.", TODAY)
    hosts = [c.value for c in values.candidates if c.kind == "url"]
    assert hosts == ["_acme-challenge.example.org", "example.org"]  # the second was an n-gram of the first


def test_the_service_a_search_is_made_in_is_no_value_of_the_search() -> None:
    phrases = [c.value for c in extract("Search Spotify for tracks by Miles Davis", TODAY).candidates]
    assert "Spotify" not in phrases and "Miles Davis" in phrases
    kept = [c.value for c in extract("Find Acme Corp for the invoice", TODAY).candidates]
    assert "Acme Corp" in kept  # "find X for ...": X is what is found


VIDEOS = [
    function(
        "playlists_insert",
        "Creates a playlist.",
        {"part": {"type": "array", "items": {"type": "string"}, "description": "The part parameter serves two "
                  "purposes in this operation. It identifies the properties that the write operation will set as "
                  "well as the properties that the API response will include."},
         "snippet": {"type": "object", "properties": {"title": {"type": "string"}, "description": {"type": "string"}}},
         "status": {"type": "object", "properties": {"privacyStatus": {"type": "string",
                                                                        "enum": ["public", "unlisted", "private"]}}}},
        ["part"],
    ),
    function(
        "search_list",
        "Retrieves a list of search resources.",
        {"part": {"type": "array", "items": {"type": "string"}, "description": "The part parameter specifies a "
                  "comma-separated list of one or more search resource properties that the API response will "
                  "include. Set the parameter value to snippet."},
         "q": {"type": "string", "description": "Textual search terms to match."}},
        ["part"],
        {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "object"}, "snippet": {"type": "object"}, "etag": {"type": "string"}}}}}},
    ),
    function(
        "videos_rate",
        "Adds a like or dislike rating to a video or removes a rating from a video.",
        {"id": {"type": "string"}, "rating": {"type": "string", "enum": ["none", "like", "dislike"]}},
        ["id", "rating"],
    ),
    function(
        "courses_patch",
        "Updates one or more fields in a course.",
        {"id": {"type": "string", "description": "Identifier of the course to update."},
         "updateMask": {"type": "string", "description": "Mask that identifies which fields on the course to "
                        "update. This field is required to do an update."},
         "courseState": {"type": "string", "enum": ["ACTIVE", "ARCHIVED"]}},
        ["id"],
    ),
]  # fmt: skip


def test_a_property_selector_takes_property_names_never_the_requests_words() -> None:
    """YouTube's `part`, Google's `updateMask`: what the call sets is named by the arguments it writes; what
    it returns, by the value its description says to set."""
    from planner.selectors import complete

    catalog = ToolCatalog.from_openai(VIDEOS)
    search = options_of(VIDEOS, "search_list", "Search for sourdough bread tutorials")
    assert search["part"].values == (["snippet"],) and search["part"].closed
    written = {"part": ["snippet"], "snippet": {"title": "Road trip"}, "status": {"privacyStatus": "private"}}
    assert complete(catalog.get("playlists_insert"), written)["part"] == ["snippet", "status"]
    patched = complete(catalog.get("courses_patch"), {"id": "d:art-12", "courseState": "ARCHIVED"})
    assert patched["updateMask"] == "courseState"  # the course's id addresses it: no field set
    assert "updateMask" not in complete(catalog.get("courses_patch"), {"id": "d:art-12", "updateMask": "x"})


def test_the_verb_a_request_opens_with_names_an_option_a_stopword_spells() -> None:
    assert options_of(VIDEOS, "videos_rate", "Like the video dQw4w9WgXcQ.")["rating"].values == ("like",)
    assert options_of(VIDEOS, "videos_rate", "给视频 dQw4w9WgXcQ 点个踩。")["rating"].values == ("dislike",)
    assert not options_of(VIDEOS, "videos_rate", "I would like to rate video dQw4w9WgXcQ")["rating"].values


def test_an_id_may_join_its_parts_with_dashes_and_underscores_and_its_thing_may_be_said_in_the_singular() -> None:
    from planner.prerequisites import literal_for

    codes = [c.value for c in extract("Delete my video with ID Ks-_Mh1QhMc.", TODAY).candidates if c.kind == "code"]
    assert codes == ["Ks-_Mh1QhMc"]
    rate = ToolCatalog.from_openai(VIDEOS).get("videos_rate")
    # "video" names the thing of `videos_rate`: the id is given, no lookup is asked for it
    assert literal_for(rate, "id", extract("Like the video dQw4w9WgXcQ.", TODAY), None)


def test_a_region_or_country_code_argument_takes_the_iso_code_of_the_country_named() -> None:
    """`regionCode` with a description that names no format ("Use a chart that is specific to the specified
    region"): its name says it is a region's code, and region codes are ISO 3166-1 alpha-2."""
    charts = [function(
        "videos_list", "Returns a list of videos.",
        {"regionCode": {"type": "string", "description": "Use a chart that is specific to the specified region"},
         "maxResults": {"type": "integer"}},
        [],
    )]  # fmt: skip
    assert options_of(charts, "videos_list", "The 5 most popular videos in Japan")["regionCode"].values == ("JP",)


def test_a_value_said_once_fills_the_plainer_of_two_fields_named_alike() -> None:
    playlists = [function(
        "playlists_insert", "Creates a playlist.",
        {"title": {"type": "string", "description": "The playlist's title."},
         "channelTitle": {"type": "string", "description": "The channel title of the channel the playlist is in."}},
        [],
    )]  # fmt: skip
    options = options_of(playlists, "playlists_insert", "Create a playlist called 'Road trip 2027'")
    assert options["title"].values == ("Road trip 2027",) and not options["channelTitle"].values


def test_the_fallback_fills_a_required_property_selector_too() -> None:
    """Without the model (the fake answers no JSON for the open query), the rule-based plan still writes
    `part`, with the value its description says to set, so the call is valid."""
    search = json.loads(json.dumps(VIDEOS[1]))
    search["function"]["parameters"]["required"] = ["part", "q"]
    result = plan(FakePlannerLLM(), "Search for sourdough bread tutorials", [search])
    assert result.path == "fallback" and result.plan.nodes[0].args["part"] == ["snippet"]
