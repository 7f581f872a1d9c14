"""Which tool a step asks for when the embedding alone is not enough (planner/selection.py), and which
earlier node an identifier takes (planner/upstream.py, planner/prerequisites.py), on real catalog shapes:
route-generated kebab ids, an output wrapped in `data`, a comment step after a sequencing connective. Model-free: the HashingEmbedder, so the configured margins, not the
embedding, decide what is compared."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

from planner.catalog import ToolCatalog
from planner.config import SelectionConfig
from planner.lexicon import lexicon
from planner.selection import ToolSelector
from planner.similarity import CachedEmbedder, HashingEmbedder
from planner.values import extract

TODAY = date(2026, 12, 1)


def fn(
    name: str,
    description: str,
    props: dict[str, Any],
    required: list[str] | None = None,
    output: dict[str, Any] | None = None,
) -> dict[str, Any]:
    parameters = {"type": "object", "properties": props, "required": required or []}
    body: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
    if output is not None:
        body["output_schema"] = output
    return {"type": "function", "function": body}


def listed(item: dict[str, Any], key: str = "items") -> dict[str, Any]:
    return {"type": "object", "properties": {key: {"type": "array", "items": item}}}


ARTIST = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
ARTISTS = ToolCatalog.from_openai([
    fn(
        "get-multiple-artists",
        "Get artists: the artists of these artist ids, singles and albums of the artist.",
        {"ids": {"type": "string", "description": "A comma-separated list of the Spotify IDs for the artists."}},
        ["ids"],
        listed(ARTIST, "artists"),
    ),
    fn(
        "get-an-artists-albums",
        "Get an artist's albums.",
        {
            "id": {"type": "string", "description": "The Spotify ID of the artist."},
            "include_groups": {"type": "string", "enum": ["album", "single", "appears_on", "compilation"]},
            "market": {"type": "string", "description": "An ISO 3166-1 alpha-2 country code."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        ["id"],
        listed({"type": "object", "properties": {"id": {"type": "string"}}}),
    ),
    fn("delete-artist-follow", "Unfollow artists.", {"ids": {"type": "string"}}, ["ids"]),
])  # fmt: skip


def sequence(request: str, catalog: ToolCatalog, **config: Any) -> list[str]:
    async def select() -> list[str]:
        selector = ToolSelector(CachedEmbedder(HashingEmbedder()), SelectionConfig(**config))
        selection = await selector.select(request, catalog, limit=8, values=extract(request, TODAY))
        return selection.sequence

    return asyncio.run(select())


def test_a_step_asks_for_the_tool_that_takes_its_lookups_output_and_more_of_its_values() -> None:
    """The list of artists fits "singles of artist … artists" best by its words; the albums tool takes that
    list's ids and what else the step gives (the singles, Germany, 10): it is the call meant."""
    request = "List the singles of artist 0TnOYISbd1XYRBk9myaseg that are available in Germany, 10 at most."
    assert sequence(request, ARTISTS, consumer_margin=0.0, step_min=0.0)[:1] == ["get-multiple-artists"]
    assert sequence(request, ARTISTS, consumer_margin=2.0, step_min=0.0) == ["get-an-artists-albums"]


def test_a_question_keeps_its_lookup_over_a_tool_that_changes_something() -> None:
    catalog = ToolCatalog.from_openai([
        fn(
            "drives_list",
            "Lists the shared drives: the shared drives with Finance in the name we have.",
            {"q": {"type": "string", "description": "Query string for searching shared drives."}},
            output=listed({"type": "object", "properties": {"id": {"type": "string"}}}, "drives"),
        ),
        fn(
            "drives_create",
            "Creates a shared drive.",
            {
                "requestId": {"type": "string", "description": "An ID of the drives list, such as a random UUID."},
                "name": {"type": "string", "description": "The name of this shared drive."},
            },
            ["requestId"],
        ),
    ])  # fmt: skip
    for request in ("Which shared drives do we have with Finance in the name?", "Show the shared drives named Finance"):
        assert sequence(request, catalog, consumer_margin=2.0, step_min=0.0) == ["drives_list"]


def test_a_step_after_a_sequencing_connective_gets_its_clearly_best_tool_below_step_min() -> None:
    catalog = ToolCatalog.from_openai([
        fn("createTask", "Create a task in a project.", {"name": {"type": "string"}}, ["name"]),
        fn(
            "createStoryForTask",
            "Comment on a task: adds a comment story.",
            {"task_gid": {"type": "string", "description": "The task to operate on."}, "text": {"type": "string"}},
            ["task_gid"],
        ),
    ])  # fmt: skip
    request = "Add a task 'Record welcome video', then comment on it: 'Priya, can you own the script?'"
    strict = {"step_min": 0.99, "no_fit_below": 0.0}
    assert "createStoryForTask" not in sequence(request, catalog, connective_lead=0.0, **strict)
    assert sequence(request, catalog, connective_lead=0.01, **strict)[-1:] == ["createStoryForTask"]
    without = "Add a task 'Record welcome video' and a comment: 'Priya, can you own the script?'"
    assert "createStoryForTask" not in sequence(without, catalog, connective_lead=0.01, **strict)


WRAPPED_TASK = {"type": "object", "properties": {"data": {"type": "object", "properties": {
    "gid": {"type": "string"}, "name": {"type": "string"}, "assignee": {"type": "object", "properties": {
        "gid": {"type": "string"}}}}}}}  # fmt: skip
TASKS = ToolCatalog.from_openai([
    fn(
        "typeaheadForWorkspace",
        "Search a workspace for projects, tasks or users by name.",
        {
            "workspace_gid": {"type": "string", "description": "Globally unique identifier for the workspace."},
            "resource_type": {"type": "string", "enum": ["project", "task", "user"]},
            "query": {"type": "string"},
        },
        ["workspace_gid", "resource_type"],
        {"type": "object", "properties": {"data": {"type": "array", "items": {"type": "object", "properties": {
            "gid": {"type": "string"}}}}}},  # fmt: skip
    ),
    fn("createTask", "Create a task.", {"name": {"type": "string"}}, ["name"], WRAPPED_TASK),
    fn(
        "createStoryForTask",
        "Comment on a task.",
        {"task_gid": {"type": "string", "description": "The task to operate on."}, "text": {"type": "string"}},
        ["task_gid"],
    ),
])  # fmt: skip


def test_an_id_takes_the_node_named_for_its_thing_inside_the_object_wrapping_its_output() -> None:
    """ "…, add a task 'X', then comment on it": the comment's `task_gid` is the id `createTask` returns under
    its `data` wrapper, not the project the typeahead found before it."""
    from planner.prerequisites import with_prerequisites
    from planner.upstream import Upstream, entity_id_refs

    made = Upstream("n2", TASKS.get("createTask"))
    found = Upstream("n1", TASKS.get("typeaheadForWorkspace"))
    assert entity_id_refs([found, made], "task_gid", lexicon("en")) == ("$n2.data.gid",)
    request = "In workspace 1201987654321 add a task 'Record welcome video', then comment on it: 'Priya?'"
    order = ["typeaheadForWorkspace", "createTask", "createStoryForTask"]
    _, lookups, _, _ = with_prerequisites(order, [None] * 3, TASKS, TASKS, SelectionConfig(), extract(request, TODAY))
    story = [(lk.producer, lk.path) for lk in lookups if lk.arg == "task_gid"]
    assert story == [(1, "data.gid")]
