"""Tool selection, proposals and drafted arguments with the model-free HashingEmbedder."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

from planner.catalog import ToolCatalog
from planner.config import SelectionConfig
from planner.drafting import draft_args
from planner.selection import ToolSelector, without_values
from planner.similarity import CachedEmbedder, HashingEmbedder
from planner.upstream import Upstream
from planner.values import extract

TODAY = date(2026, 12, 1)


def fn(
    name: str, description: str, props: dict[str, Any], required: list[str], output: dict[str, str] | None = None
) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": props, "required": required},
    }
    if output:
        function["output_schema"] = {"type": "object", "properties": {k: {"type": v} for k, v in output.items()}}
    return {"type": "function", "function": function}


TOOLS = ToolCatalog.from_openai(
    [
        fn(
            "find_cars",
            "Search rental cars available in a city",
            {"city": {"type": "string"}, "date": {"type": "string"}},
            ["city", "date"],
            {"car_id": "string", "car_type": "string", "price": "number"},
        ),
        fn(
            "reserve_car",
            "Reserve a rental car",
            {"car_id": {"type": "string"}, "car_type": {"type": "string"}, "date": {"type": "string"}},
            ["car_id", "car_type", "date"],
            {"booking_id": "string"},
        ),
        fn(
            "translate_text",
            "Translate text into another language",
            {"text": {"type": "string"}, "target_language": {"type": "string"}},
            ["text", "target_language"],
            {"translated_text": "string"},
        ),
        fn(
            "get_song_lyrics",
            "Get the lyrics of a song",
            {"title": {"type": "string"}, "artist": {"type": "string"}},
            ["title", "artist"],
            {"lyrics": "string"},
        ),
        fn(
            "send_sms",
            "Send an SMS message to a phone number",
            {"phone_number": {"type": "string"}, "message": {"type": "string"}},
            ["phone_number", "message"],
            {"status": "string"},
        ),
    ]
)


def select(request: str, limit: int = 8, **config: Any) -> Any:
    selector = ToolSelector(CachedEmbedder(HashingEmbedder()), SelectionConfig(**config))
    return asyncio.run(selector.select(request, TOOLS, limit=limit))


def test_each_step_gets_its_tool_in_order() -> None:
    selection = select("Get the lyrics of the song 'Imagine' by 'John Lennon', then translate the lyrics into French")
    assert selection.sequence == ["get_song_lyrics", "translate_text"]
    assert not selection.no_fit


def test_a_prerequisite_producing_the_required_fields_comes_first() -> None:
    selection = select("Reserve a rental car in Chicago on 01/10/2024")
    assert selection.sequence == ["find_cars", "reserve_car"]
    assert select("Reserve a rental car in Chicago", prerequisites=False).sequence == ["reserve_car"]


def test_one_required_identifier_another_tool_outputs_brings_that_lookup_first() -> None:
    """`book_stylist` needs a `stylist_name` (1 of its 3 required arguments: not the majority rule)."""
    tools = ToolCatalog.from_openai(
        [
            fn(
                "find_salon",
                "Find a hair salon in a city",
                {"city": {"type": "string"}},
                ["city"],
                {"stylist_name": "string", "phone": "string"},
            ),  # fmt: skip
            fn(
                "book_stylist",
                "Book an appointment with a hair stylist",
                {"stylist_name": {"type": "string"}, "day": {"type": "string"}, "time": {"type": "string"}},
                ["stylist_name", "day", "time"],
                {"confirmed": "boolean"},
            ),
        ]
    )

    def sequence(**config: Any) -> list[str]:
        selector = ToolSelector(CachedEmbedder(HashingEmbedder()), SelectionConfig(**config))
        return asyncio.run(
            selector.select("Book an appointment with a stylist on Friday at 3pm", tools, limit=8)
        ).sequence

    assert sequence() == ["find_salon", "book_stylist"]
    assert sequence(prerequisite_identifiers=()) == ["book_stylist"]


def test_nothing_fits() -> None:
    selection = select("zzzz qqqq", no_fit_below=0.2)
    assert selection.no_fit and selection.sequence == []


def test_the_shortlist_keeps_the_best_tools_in_catalog_order() -> None:
    selection = select("Send an SMS to +1 555-123-4567", limit=2)
    assert len(selection.shortlist) == 2 and "send_sms" in selection.shortlist.names()


def test_draft_takes_named_values_and_the_output_the_step_mentions() -> None:
    request = "Get the lyrics of 'Imagine' by 'John Lennon', then send the lyrics to the phone number 555-123-4567"
    values = extract(request, TODAY)
    lyrics = TOOLS.get("get_song_lyrics")
    first = draft_args(lyrics, values, (0, 40), [], step=request[:40])
    assert first["title"] == "Imagine"
    step = "send the lyrics to the phone number 555-123-4567"
    start = request.index(step)
    second = draft_args(
        TOOLS.get("send_sms"), values, (start, len(request)), [Upstream("n1", lyrics, first)], step=step
    )
    assert second == {"phone_number": "555-123-4567", "message": "$n1.lyrics"}


def test_draft_reuses_an_earlier_literal_of_the_same_argument_and_refers_to_unknown_fields() -> None:
    request = "Find a rental car in Chicago on 01/10/2024 and reserve it"
    values = extract(request, TODAY)
    found = draft_args(TOOLS.get("find_cars"), values, (0, 42), [], step=request[:42])
    assert found == {"city": "Chicago", "date": "01/10/2024"}
    reserve = draft_args(
        TOOLS.get("reserve_car"),
        values,
        (43, len(request)),
        [Upstream("n1", TOOLS.get("find_cars"), found)],
        step="reserve it",
    )
    assert reserve == {"car_id": "$n1.car_id", "car_type": "$n1.car_type", "date": "01/10/2024"}


def test_a_step_that_only_names_an_earlier_result_gets_its_own_tool(minilm: CachedEmbedder) -> None:
    """MiniLM: the second step mentions the mortgage payment, but asks for its square; two flight
    searches stay two flight searches (the words left after the shared ones fit no other tool)."""
    catalog = ToolCatalog.from_openai(
        [
            fn(
                "calculate_mortgage_payment",
                "Calculate the monthly mortgage payment",
                {"loan_amount": {"type": "number"}},
                ["loan_amount"],
            ),  # fmt: skip
            fn("calculate_squared", "Calculate the square of a number", {"number": {"type": "number"}}, ["number"]),
            fn(
                "search_flights",
                "Search for flights between two cities on a date",
                {"origin": {"type": "string"}, "destination": {"type": "string"}},
                ["origin", "destination"],
            ),  # fmt: skip
            fn("send_email", "Send an email", {"to": {"type": "string"}}, ["to"]),
        ]
    )

    def proposal(request: str, **config: Any) -> list[str]:
        selector = ToolSelector(minilm, SelectionConfig(**config))
        return asyncio.run(selector.select(request, catalog, limit=8)).sequence

    mortgage = (
        "Calculate the monthly mortgage payment for a loan of 200000 at 3% over 30 years, "
        "and then calculate the square of the monthly mortgage payment."
    )
    assert proposal(mortgage) == ["calculate_mortgage_payment", "calculate_squared"]
    assert proposal(mortgage, repeat_mask=False) == ["calculate_mortgage_payment"] * 2  # what it did before
    trips = (
        "Search flights from Shanghai to Hangzhou on June 1, then search flights from Hangzhou to Beijing on June 5."
    )
    assert proposal(trips) == ["search_flights", "search_flights"]


def test_tools_are_compared_with_the_requests_words_not_its_values(minilm: CachedEmbedder) -> None:
    """MiniLM: the coordinates, dates and quoted names a request writes say which parameter takes them,
    not which tool it asks for; the words left choose the tool. A request of values alone is compared as
    written."""
    kinds = SelectionConfig().embed_without
    request = "Show me 5 cinemas near 48.8584,2.2945 from 2027-03-01 for 'Weekend plans'."
    values = extract(request, date(2026, 11, 30))
    assert without_values(request, 0, values, kinds) == "Show me cinemas near from for ."
    catalog = ToolCatalog.from_openai([
        fn("localitiesNearby", "Nearby points of interest. Retrieve points of interest surrounding a given location.",
           {"location": {"type": "string"}, "limit": {"type": "integer"}}, ["location"]),
        fn("getTolls", "Tolls. Get tolls on a route between an origin and a destination.",
           {"origin": {"type": "string"}, "destination": {"type": "string"}}, ["origin", "destination"]),
    ])  # fmt: skip

    def chosen(text: str, **config: Any) -> list[str]:
        return asyncio.run(ToolSelector(minilm, SelectionConfig(**config)).select(text, catalog, limit=8)).sequence

    assert chosen("Show me 5 cinemas close to 48.8584,2.2945.") == ["localitiesNearby"]  # ("near" would name `nearby` by the lexicon)
    assert chosen("Show me 5 cinemas close to 48.8584,2.2945.", embed_without=frozenset()) == []  # as written: no fit
    assert without_values("48.8584,2.2945", 0, extract("48.8584,2.2945", date(2026, 11, 30)), kinds) == "48.8584,2.2945"
    spelled = "Unschedule the 'Black Friday teaser' single send tomorrow."  # words that are numbers and dates stay
    assert without_values(spelled, 0, extract(spelled, date(2026, 11, 30)), kinds) == "Unschedule the single send tomorrow."


def test_a_step_that_names_another_tool_is_not_more_of_the_same_call() -> None:
    from planner.selection import _writes_name_of
    from planner.steps import Step

    def step(text: str) -> Step:
        return Step(text, 0, len(text))

    assert _writes_name_of(step("invite priya@school.edu to co-teach it"), "classroom_invitations_create")
    assert _writes_name_of(step("announce 'First meeting' there"), "courses_announcements_create")
    assert not _writes_name_of(step("give me its details"), "localitiesGeocode")
    assert not _writes_name_of(step("create it again"), "courses_create")  # the tool's verb alone names nothing
