"""Rules found on a mail API's catalog (Gmail's shape, invented here): a user id with a keyword of its own
(`me`), a search's free-text `q`, credentials among the query parameters, and descriptions that quote the
names of other parameters. Logic only: no model (the engine's end-to-end case is in tests/engine)."""

from __future__ import annotations

from datetime import date
from typing import Any

from planner.arg_options import unwritable
from planner.catalog import ToolCatalog
from planner.drafting import draft_args
from planner.evidence import NodeEvidence
from planner.lookups import description_keywords
from planner.selection import StepHint, _join_argument_steps
from planner.steps import split_steps
from planner.values import extract
from tests.planner import real_catalogs as rc

TODAY = date(2026, 11, 30)
TEXT = {"type": "string"}
USER = {**TEXT, "description": "The user's email address. The special value `me` can be used to indicate the user."}
CREDENTIALS = {
    "access_token": {**TEXT, "description": "OAuth access token."},
    "key": {**TEXT, "description": "API key. Your API key identifies your project. Required unless you send a token."},
}
MAIL = [
    rc.function(
        "mail_messages_list",
        "Lists the messages in the user's mailbox.",
        {
            "userId": USER,
            "q": {**TEXT, "description": "Only return messages matching the specified query."},
            "maxResults": {"type": "integer", "description": "Maximum number of messages to return."},
            **CREDENTIALS,
        },
        ["userId"],
        {"type": "object", "properties": {"messages": {"type": "array", "items": {"type": "object"}}}},
    ),
    rc.function(
        "mail_filters_create",
        "Creates a filter.",
        {"userId": USER, "from": {**TEXT, "description": "The sender's address."}, "labelId": TEXT, **CREDENTIALS},
        ["userId"],
    ),
    rc.function(
        "mail_delegates_create",
        "Adds a delegate to the mailbox.",
        {"userId": USER, "delegateEmail": {**TEXT, "format": "email"}, **CREDENTIALS},
        ["userId"],
    ),
]


def listing(key: str, *fields: str) -> dict[str, Any]:
    """An output schema holding a list of objects under `key`, each with the string `fields`."""
    item = {"type": "object", "properties": {f: TEXT for f in fields}}
    return {"type": "object", "properties": {key: {"type": "array", "items": item}}}


def options_of(tool: str, request: str) -> Any:
    return NodeEvidence(extract(request, TODAY), None, []).node(ToolCatalog.from_openai(MAIL).get(tool))


def test_a_credential_the_connection_supplies_is_never_written() -> None:
    options = options_of("mail_delegates_create", "Give assistant@acme.com delegate access to my mailbox, key k-1")
    assert not options["access_token"].supported and not options["key"].supported
    assert options["delegateEmail"].values == ("assistant@acme.com",)
    tool = ToolCatalog.from_openai(MAIL).get("mail_delegates_create")
    drafted = draft_args(tool, extract("Give assistant@acme.com delegate access to my mailbox", TODAY), None, [])
    assert "access_token" not in drafted and drafted["userId"] == "me"
    # named like a credential but described as something else, or described as one but named otherwise
    assert not unwritable({**TEXT, "description": "Page token to retrieve a specific page of results."}, "pageToken")
    assert not unwritable({**TEXT, "description": "The key of the setting to change."}, "key")
    assert not unwritable({**TEXT, "description": "API key of the webhook's target service."}, "label")


def test_a_field_the_description_calls_read_only_is_the_services_unless_an_exception_follows() -> None:
    said = [
        "Parent task identifier. This field is read-only. Use the \"move\" method to move the task.",
        "Collection of links. This collection is read-only.",
        "Whether this address is the primary address. This is a read-only field assigned by the server.",
        "Output only. The time the task was completed.",
    ]
    for description in said:
        assert unwritable({**TEXT, "description": description}, "parent"), description
    writable = [
        "The address in the From: header. This is read-only for all operations except create.",
        "Read-only, except when importing an event.",
        "Whether the content of the file is read-only.",
        "The id of the VPC the read-only replica joins.",
    ]
    for description in writable:
        assert not unwritable({**TEXT, "description": description}, "sendAsEmail"), description


def test_quoted_text_nothing_ties_is_a_searchs_query_and_a_count_is_no_second_search() -> None:
    request = "Search my mail for 'invoice 4471' and show at most 10 messages."
    options = options_of("mail_messages_list", request)
    assert options["q"].values == ("invoice 4471",) and options["maxResults"].values == (10,)
    assert options["userId"].values == ("me",)
    catalog = ToolCatalog.from_openai(MAIL)
    values = extract(request, TODAY)
    steps = split_steps(request, ["search", "show", "create", "add"], set())
    assert len(steps) == 2  # "… and show at most 10 messages" reads as a step of its own
    hints = [StepHint(step, "mail_messages_list", 0.5) for step in steps]
    assert len(_join_argument_steps(request, hints, catalog, values)) == 1  # one call, with a size
    # an earlier node already searched for it: a second lookup does not search for it again
    from planner.upstream import Upstream

    tool = catalog.get("mail_messages_list")
    searched = NodeEvidence(values, None, [Upstream("n1", tool, {"userId": "me", "q": "invoice 4471"})]).node(tool)
    assert not searched["q"].supported
    other = "Search my mail for 'invoice 4471' and search it for 'receipt 9'."
    steps = split_steps(other, ["search"], set())
    hints = [StepHint(step, "mail_messages_list", 0.5) for step in steps]
    assert len(_join_argument_steps(other, hints, catalog, extract(other, TODAY))) == len(steps) == 2


def test_an_identifier_with_a_keyword_takes_only_a_value_tied_to_it() -> None:
    options = options_of("mail_filters_create", "Create a filter for mail from news@shop.com under the label Label_12")
    assert options["userId"].values == ("me",)  # not the sender, not the label
    options = options_of("mail_filters_create", "For user bob@acme.com, filter mail from news@shop.com")
    assert options["userId"].values[0] == "bob@acme.com"  # named as the user: it comes first


def test_description_keywords_are_values_not_the_names_of_parameters_or_methods() -> None:
    assert description_keywords(USER, "userId") == ["me"]
    said = "This can be a file key or branch key. Use `GET /v1/files/:key` with the `branch_data` query param."
    assert description_keywords({"description": said}, "file_key") == []
    assert description_keywords({"description": "Use `segment_id` instead. Deprecated."}, "audience_id") == []
    assert description_keywords({"description": 'Use the "move" method to move the task.'}, "parent") == []
    assert description_keywords({"description": "Use `page` to navigate through results."}, "page") == []
    assert description_keywords({"description": 'Use the "primary" keyword.'}, "calendarId") == ["primary"]


def test_a_lookup_that_lists_everything_and_is_narrowed_by_nothing_the_request_gives_is_a_gap() -> None:
    """ "Add the note to one of my folders": the folder list takes no name, so no name picks one (its first
    item would be a guess; the user must say which); a list filtered by what the request gives (the shopper)
    is a lookup."""
    from planner.config import SelectionConfig
    from planner.prerequisites import with_prerequisites

    items = listing("items", "id", "title")
    catalog = ToolCatalog.from_openai(
        [
            rc.function("folders_list", "Lists the user's folders.", {"fields": TEXT}, [], items),
            rc.function(
                "folders_addNote",
                "Adds a note to a folder.",
                {"folderId": {**TEXT, "description": "ID of the folder."}, "note": TEXT},
                ["folderId", "note"],
            ),  # fmt: skip
            rc.function(
                "storedMethods_list",
                "Lists the stored payment methods of a shopper.",
                {"shopperReference": {**TEXT, "description": "The shopper's reference."}},
                [],
                items,
            ),
            rc.function(
                "payments_create",
                "Pays with a stored payment method.",
                {
                    "storedMethodId": {**TEXT, "description": "ID of the stored payment method."},
                    "amount": {"type": "integer"},
                },
                ["storedMethodId", "amount"],
            ),  # fmt: skip
        ]
    )

    def plan(request: str, tool: str) -> tuple[list[str], list[str]]:
        values = extract(request, TODAY)
        sequence, _, _, gaps = with_prerequisites([tool], [None], catalog, catalog, SelectionConfig(), values)
        return sequence, [g.arg for g in gaps]

    for request in ("Add the note 'Read it twice' to one of my folders", "Add the note 'Buy' to my folder Later"):
        assert plan(request, "folders_addNote") == (["folders_addNote"], ["folderId"])
    sequence, _ = plan("Pay 120 with the stored card of shopper cust-8841", "payments_create")
    assert sequence == ["storedMethods_list", "payments_create"]


def test_a_lookup_is_seeded_by_the_name_the_request_gives_the_thing_not_by_values_it_says_are_others() -> None:
    """Asana's shape: the project is found by typeahead in a workspace. The workspace's id ("in workspace
    120…") and the new section's name ("a section called 'QA'") are not the project's name; a quoted name
    in a calendar ("日历里“周会”") is still the event's (a name is no calendar id)."""
    from planner.config import SelectionConfig
    from planner.prerequisites import with_prerequisites

    def gid(thing: str) -> dict[str, str]:
        return {**TEXT, "description": f"Globally unique identifier for the {thing}."}

    found = listing("data", "gid", "name")
    typeahead = rc.function(
        "typeaheadForWorkspace",
        "Get objects via a typeahead search",
        {"workspace_gid": gid("workspace"), "resource_type": {**TEXT, "enum": ["project", "task"]}, "query": TEXT},
        ["workspace_gid", "resource_type"],
        found,
    )
    catalog = ToolCatalog.from_openai(
        [
            typeahead,
            rc.function(
                "createSectionForProject",
                "Create a section in a project",
                {"project_gid": gid("project"), "name": TEXT},
                ["project_gid"],
            ),  # fmt: skip
        ]
    )
    request = "Create a section called 'QA' in the Website Relaunch project. We're in workspace 1201987654321."
    values = extract(request, TODAY)
    sequence, lookups, _, _ = with_prerequisites(
        ["createSectionForProject"], [None], catalog, catalog, SelectionConfig(), values
    )
    assert sequence == ["typeaheadForWorkspace", "createSectionForProject"]
    assert [lk.seed for lk in lookups] == ["Website Relaunch"]
    # nothing calls the code the workspace's here ("ws"): the request's one identifier is still the lookup's
    # own required one, never the name it looks up
    tasks = rc.function("getTasksForProject", "Get the tasks of a project", {"project_gid": gid("project")},
                        ["project_gid"])  # fmt: skip
    catalog = ToolCatalog.from_openai([typeahead, tasks])
    request = "What's in the Q2 Hiring project right now? (ws 1201987654321)"
    sequence, lookups, _, _ = with_prerequisites(
        ["getTasksForProject"], [None], catalog, catalog, SelectionConfig(), extract(request, TODAY)
    )
    assert sequence == ["typeaheadForWorkspace", "getTasksForProject"]
    assert [lk.seed for lk in lookups] == ["Q2 Hiring"]


def test_a_sid_that_uniquely_identifies_the_resource_is_an_identifier_the_tools_thing_names() -> None:
    """Twilio's shape: `Sid` ("A 34 character string that uniquely identifies this resource.") is an
    identifier — quoted text is never its value — and "conversation CH1b…" gives it, the tool's own thing
    naming the code (no lookup, no needs-input)."""
    from planner.argkinds import classify
    from planner.prerequisites import literal_for

    sid = {**TEXT, "description": "A 34 character string that uniquely identifies this resource."}
    assert classify("Sid", sid).is_identifier and classify("RoleSid", TEXT).is_identifier
    assert not classify("Body", {**TEXT, "description": "The content of the message."}).is_identifier
    tools = [rc.function("UpdateConversation", "Update an existing conversation", {"Sid": sid, "FriendlyName": TEXT},
                         ["Sid"])]  # fmt: skip
    tool = ToolCatalog.from_openai(tools).get("UpdateConversation")
    request = "Rename conversation CH1b2c3d4e5f60718293a4b5c6d7e8f901 to 'VIP customers'."
    assert literal_for(tool, "Sid", extract(request, TODAY), None)
    options = NodeEvidence(extract(request, TODAY), None, []).node(tool)
    assert options["Sid"].values == ("CH1b2c3d4e5f60718293a4b5c6d7e8f901",)
    assert options["FriendlyName"].values == ("VIP customers",)
    # a participant's `Sid` beside the conversation's `ConversationSid`: "conversation CH1b…" is not the participant
    participant = rc.function("FetchConversationParticipant", "Fetch a participant of the conversation",
                              {"ConversationSid": TEXT, "Sid": sid}, ["ConversationSid", "Sid"])  # fmt: skip
    tool = ToolCatalog.from_openai([participant]).get("FetchConversationParticipant")
    values = extract("Show the participant of conversation CH1b2c3d4e5f60718293a4b5c6d7e8f901", TODAY)
    assert literal_for(tool, "ConversationSid", values, None) and not literal_for(tool, "Sid", values, None)


def test_quoted_text_nothing_ties_is_the_content_a_tool_that_changes_things_writes() -> None:
    """No name-like argument free: the quoted text is the message's `Body` ("发一条消息：“会议改到三点”"); a
    subject takes the first quoted text, the body the next."""
    message = {"ConversationSid": TEXT, "Author": TEXT, "Body": TEXT}
    tools = [
        rc.function(
            "CreateConversationMessage", "Add a new message to the conversation", message, ["ConversationSid"]
        ),  # fmt: skip
        rc.function("send_mail", "Send an e-mail", {"to": TEXT, "subject": TEXT, "body": TEXT}, ["to"]),
    ]
    catalog = ToolCatalog.from_openai(tools)
    request = "在会话 CHa0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5 里发一条消息：“会议改到三点”。"
    options = NodeEvidence(extract(request, TODAY), None, []).node(catalog.get("CreateConversationMessage"))
    assert options["Body"].values == ("会议改到三点",) and not options["Author"].supported
    request = "Mail ana@example.com 'Offsite' with 'See you in Lisbon.'"
    options = NodeEvidence(extract(request, TODAY), None, []).node(catalog.get("send_mail"))
    assert options["subject"].values == ("Offsite",) and options["body"].values == ("See you in Lisbon.",)


def test_a_send_named_in_either_language_is_looked_up_and_its_name_is_not_the_copys() -> None:
    """A marketing API's shape: `duplicate(id, name?)` beside `search(name?)`. "the single send named
    'Spring Sale'" gives no id 1 (a number word is no id), the lookup is seeded with the name — in Chinese
    too, where the name is said before the thing ("名为“春季促销”的单次发送", 复制 glossing as "copy") — and
    the duplicate's optional `name` (the copy's) is not "single send", the words before "named"."""
    from planner.config import SelectionConfig
    from planner.prerequisites import literal_for, with_prerequisites

    sends = listing("result", "id", "name")
    catalog = ToolCatalog.from_openai(
        [
            rc.function("SearchSingleSend", "Get Single Sends Search", {"name": TEXT}, [], sends),
            rc.function(
                "DuplicateSingleSend",
                "Duplicate Single Send",
                {"id": TEXT, "name": {**TEXT, "description": "The name of the duplicate Single Send."}},
                ["id"],
            ),
        ]
    )
    duplicate = catalog.get("DuplicateSingleSend")
    said = {'Duplicate the single send named "Spring Sale".': "Spring Sale", "复制名为“春季促销”的单次发送。": "春季促销"}
    for request, name in said.items():
        values = extract(request, TODAY)
        assert not literal_for(duplicate, "id", values, None), request
        sequence, lookups, _, gaps = with_prerequisites(
            ["DuplicateSingleSend"], [None], catalog, catalog, SelectionConfig(), values
        )
        assert sequence == ["SearchSingleSend", "DuplicateSingleSend"] and not gaps, request
        assert [lk.seed for lk in lookups] == [name]
    options = NodeEvidence(extract('Duplicate the single send named "Spring Sale".', TODAY), None, []).node(duplicate)
    assert "single send" not in options["name"].values
    # an id said in digits is still one
    assert literal_for(duplicate, "id", extract("Duplicate single send 4711.", TODAY), None)


def test_digit_examples_make_an_identifier_and_a_body_field_naming_the_looked_up_thing_takes_its_id() -> None:
    """A task API's shape (Asana's, written here): the body's `project` ("The project to create the section
    in", example "13579") is an identifier — never the workspace code the request names — and it takes the
    id the lookup found for the path's `project_gid`, the same project."""
    from planner.argkinds import classify
    from planner.flat_args import flat_tool

    project = {**TEXT, "description": "The project to create the section in", "examples": ["13579"]}
    assert classify("project", project).is_identifier
    assert not classify("phone", {**TEXT, "examples": ["5551234"]}).is_identifier  # a phone number is digits too
    assert not classify("name", {**TEXT, "examples": ["Next Actions"]}).is_identifier
    tool = ToolCatalog.from_openai(
        [
            rc.function(
                "createSectionForProject",
                "Create a section in a project",
                {
                    "project_gid": {**TEXT, "description": "Globally unique identifier for the project."},
                    "data": {"type": "object", "properties": {"project": project, "name": TEXT},
                             "required": ["project", "name"]},
                },  # fmt: skip
                ["project_gid"],
            )
        ]
    ).get("createSectionForProject")
    request = "Create a section called 'QA' in the Website Relaunch project. We're in workspace 1201987654321."
    links = {"project_gid": ("$n1.data.0.gid",)}
    options = NodeEvidence(extract(request, TODAY), None, [], links).node(flat_tool(tool))
    assert options["data.project"].refs == ("$n1.data.0.gid",) and options["data.project"].values == ()
    assert options["data.name"].values == ("QA",)


def test_an_identifier_is_offered_only_values_its_pattern_accepts() -> None:
    """Twilio's participant `Sid` ("^MB[0-9a-fA-F]{32}$") is not the conversation's "CH…" code: nothing in
    the request fits it, so it is missing (needs-input), not written and refused by the service."""
    sid = {**TEXT, "pattern": "^MB[0-9a-fA-F]{32}$", "description": "A 34 character string that uniquely identifies this resource."}  # fmt: skip
    participant = rc.function("FetchConversationParticipant", "Fetch a participant of the conversation",
                              {"ConversationSid": TEXT, "Sid": sid}, ["ConversationSid", "Sid"])  # fmt: skip
    tool = ToolCatalog.from_openai([participant]).get("FetchConversationParticipant")
    request = "Show participant CH1b2c3d4e5f60718293a4b5c6d7e8f901 of conversation CH1b2c3d4e5f60718293a4b5c6d7e8f902"
    options = NodeEvidence(extract(request, TODAY), None, []).node(tool)
    assert options["Sid"].values == () and options["Sid"].missing
    fitting = request.replace("participant CH1b2c3d4e5f60718293a4b5c6d7e8f901", "participant MB" + "0123456789abcdef" * 2)
    assert NodeEvidence(extract(fitting, TODAY), None, []).node(tool)["Sid"].values == ("MB" + "0123456789abcdef" * 2,)


def test_a_list_of_ids_the_request_names_one_of_gets_its_lookup_and_takes_the_one_found() -> None:
    """A task API's shape (Asana's, written here): the body's optional `projects` ("Array of project gids",
    items "Gid of a project.") of a new task. "…in the Onboarding Revamp project (workspace 120…)" names
    one project: the typeahead looks it up by "Onboarding Revamp" — not by the sentence's opening "In the",
    and the code after "workspace" is the workspace's, not the project's — and the list takes that one
    reference. A request that names no project writes no list and looks nothing up."""
    from planner.config import SelectionConfig
    from planner.flat_args import flat_catalog
    from planner.prerequisites import with_prerequisites

    gids = {"type": "array", "items": {**TEXT, "description": "Gid of a project."},
            "description": "*Create-Only* Array of project gids."}  # fmt: skip
    workspace = {**TEXT, "description": "Gid of a workspace.", "examples": ["12345"]}
    typeahead = rc.function(
        "typeaheadForWorkspace",
        "Get objects via a typeahead search",
        {"workspace_gid": {**TEXT, "description": "Globally unique identifier for the workspace or organization."},
         "resource_type": {**TEXT, "enum": ["project", "task", "user"]}, "query": TEXT},
        ["workspace_gid", "resource_type"],
        listing("data", "gid", "name"),
    )  # fmt: skip
    body = {"type": "object", "properties": {"name": TEXT, "projects": gids, "workspace": workspace}}
    create = rc.function("createTask", "Create a task", {"data": body}, ["data"])
    flat = flat_catalog(ToolCatalog.from_openai([typeahead, create]))  # planned field by field
    request = "In the Onboarding Revamp project (workspace 1201987654321) add a task 'Record welcome video'."
    sequence, lookups, _, _ = with_prerequisites(["createTask"], [None], flat, flat, SelectionConfig(), extract(request, TODAY))
    assert sequence == ["typeaheadForWorkspace", "createTask"]
    assert [(lk.arg, lk.seed) for lk in lookups] == [("data.projects", "Onboarding Revamp")]
    links = {"data.projects": ("$n1.data.0.gid",)}
    options = NodeEvidence(extract(request, TODAY), None, [], links).node(flat.get("createTask"))
    assert options["data.projects"].values == (["$n1.data.0.gid"],) and options["data.projects"].closed
    plain = "Add a task 'Record welcome video' in workspace 1201987654321."
    assert with_prerequisites(["createTask"], [None], flat, flat, SelectionConfig(), extract(plain, TODAY))[0] == [
        "createTask"
    ]


def test_a_date_without_a_clock_fills_the_date_field_not_its_date_time_twin() -> None:
    """Asana's shape: `due_on` ("YYYY-MM-DD") and `due_at` (date-time) are one moment. "due March 3, 2027"
    writes `due_on` only; "due March 3, 2027 at 17:00 UTC" writes `due_at` only."""
    from planner.flat_args import flat_tool

    body = {
        "type": "object",
        "properties": {
            "name": TEXT,
            "due_on": {**TEXT, "format": "date", "description": "The localized date on which this task is due."},
            "due_at": {**TEXT, "format": "date-time", "description": "The UTC date and time on which it is due."},
        },
    }
    tool = flat_tool(ToolCatalog.from_openai([rc.function("createTask", "Create a task", {"data": body}, ["data"])])
                     .get("createTask"))  # fmt: skip

    def written(request: str) -> dict[str, tuple[object, ...]]:
        options = NodeEvidence(extract(request, TODAY), None, []).node(tool)
        return {a: o.values for a, o in options.items() if a.startswith("data.due") and o.supported and o.values}

    assert written("Add a task 'Taxes' due March 3, 2027.") == {"data.due_on": ("2027-03-03",)}
    clocked = written("Add a task 'Taxes' due March 3, 2027 at 17:00 UTC.")
    assert list(clocked) == ["data.due_at"] and str(clocked["data.due_at"][0]).startswith("2027-03-03T17:00")
    # Asana declares `due_at` `format: date`; its example and description still say it is a date and time
    body["properties"]["due_at"] = {**TEXT, "format": "date", "examples": ["2019-09-15T02:06:58.147Z"],
                                    "description": "The UTC date and time on which this task is due."}  # fmt: skip
    tool = flat_tool(ToolCatalog.from_openai([rc.function("createTask", "Create a task", {"data": body}, ["data"])])
                     .get("createTask"))  # fmt: skip
    assert written("Add a task 'Taxes' due March 3, 2027.") == {"data.due_on": ("2027-03-03",)}


def test_a_search_over_several_kinds_is_asked_for_the_kind_its_consumer_needs() -> None:
    """Asana's typeahead (`resource_type`: project, task, user) looking up the project of a new task's
    `projects` list ("Gid of a project.") or of a path's `project_gid` is asked for `project`."""
    from planner.flat_args import flat_tool, id_items_view
    from planner.lookups import kind_option

    typeahead = ToolCatalog.from_openai([rc.function(
        "typeaheadForWorkspace", "Get objects via a typeahead search",
        {"workspace_gid": TEXT, "resource_type": {**TEXT, "enum": ["custom_field", "project", "task", "user"]},
         "query": TEXT}, ["workspace_gid", "resource_type"])]).get("typeaheadForWorkspace")  # fmt: skip
    gids = {"type": "array", "items": {**TEXT, "description": "Gid of a project."}, "description": "Array of project gids."}
    body = {"type": "object", "properties": {"name": TEXT, "projects": gids}}
    create = flat_tool(ToolCatalog.from_openai([rc.function("createTask", "Create a task", {"data": body}, ["data"])])
                       .get("createTask"))  # fmt: skip
    assert kind_option(typeahead, id_items_view(create), "data.projects") == ("resource_type", "project")
    section = ToolCatalog.from_openai([rc.function("createSectionForProject", "Create a section",
                                                   {"project_gid": TEXT}, ["project_gid"])]).get("createSectionForProject")  # fmt: skip
    assert kind_option(typeahead, section, "project_gid") == ("resource_type", "project")
    assert kind_option(section, create, "data.projects") is None  # no kind to choose


def test_a_name_is_no_uuid_id_and_another_things_id_is_no_producer() -> None:
    """A cloud API's shape (DigitalOcean's, written here): `volume_id` is `format: uuid`, so "the pg-data-01
    volume" names the volume — its id is looked up in `list_all_volumes`, not taken from the name — and
    `get_volume_snapshot_by_id`'s `snapshot.id` is the snapshot's id, not the volume's."""
    from planner.config import SelectionConfig
    from planner.prerequisites import literal_for, with_prerequisites

    uuid = {**TEXT, "format": "uuid", "description": "The ID of the block storage volume."}
    catalog = ToolCatalog.from_openai([
        rc.function("get_volume_snapshot_by_id", "Retrieve an existing volume snapshot",
                    {"snapshot_id": TEXT}, ["snapshot_id"],
                    {"type": "object", "properties": {"snapshot": {"type": "object", "properties": {"id": TEXT}}}}),
        rc.function("list_all_volumes", "List all block storage volumes", {"name": TEXT}, [],
                    listing("volumes", "id", "name")),
        rc.function("post_volume_action_by_id", "Initiate a block storage action by volume id",
                    {"volume_id": uuid, "droplet_id": {"type": "integer"}}, ["volume_id", "droplet_id"]),
    ])  # fmt: skip
    tool = catalog.get("post_volume_action_by_id")
    named = extract("Attach the pg-data-01 volume to droplet 387236211.", TODAY)
    assert not literal_for(tool, "volume_id", named, None)
    given = extract("Attach volume 7724db7c-e098-11e5-b522-000f53304e51 to droplet 387236211.", TODAY)
    assert literal_for(tool, "volume_id", given, None)
    sequence, lookups, _, _ = with_prerequisites(["post_volume_action_by_id"], [None], catalog, catalog,
                                                 SelectionConfig(), named)  # fmt: skip
    assert sequence == ["list_all_volumes", "post_volume_action_by_id"]
    assert [(lk.path, lk.seed) for lk in lookups] == [("volumes.0.id", "pg-data-01")]


def test_a_shelf_is_named_by_its_compound_and_the_catalogs_own_search_finds_the_volume() -> None:
    """A library API's shape (Google Books', written here): "bookshelf 3" and "my bookshelf with ID 2" give
    `shelf` (a compound ending in the argument's word names it; the id word names the thing before it, so
    "ID 2" is not the volume's id), and the volume is looked up in the catalog's own search by title
    (`volumes_list(q)`), not in the shelf's volume list, which needs a shelf besides the name."""
    from planner.config import SelectionConfig
    from planner.prerequisites import literal_for, with_prerequisites

    items = listing("items", "id", "title")
    catalog = ToolCatalog.from_openai([
        rc.function("books_volumes_list", "Performs a book search.", {"q": {**TEXT, "description": "Full-text search query string."}}, ["q"], items),
        rc.function("books_mylibrary_bookshelves_volumes_list", "Gets volume information for volumes on a bookshelf.",
                    {"shelf": {**TEXT, "description": "The bookshelf ID or name retrieve volumes for."}, "q": TEXT}, ["shelf"], items),
        rc.function("books_mylibrary_bookshelves_removeVolume", "Removes a volume from a bookshelf.",
                    {"shelf": {**TEXT, "description": "ID of bookshelf from which to remove a volume."},
                     "volumeId": {**TEXT, "description": "ID of volume to remove."}}, ["shelf", "volumeId"]),
    ])  # fmt: skip
    tool = catalog.get("books_mylibrary_bookshelves_removeVolume")
    for request in ("Take 'Atomic Habits' off bookshelf 3.", "Remove 'Atomic Habits' from my bookshelf with ID 3."):
        values = extract(request, TODAY)
        assert literal_for(tool, "shelf", values, None) and not literal_for(tool, "volumeId", values, None)
        sequence, lookups, _, _ = with_prerequisites([tool.name], [None], catalog, catalog, SelectionConfig(), values)
        assert sequence == ["books_volumes_list", tool.name], request
        assert [(lk.arg, lk.seed) for lk in lookups] == [("volumeId", "Atomic Habits")]
        options = NodeEvidence(values, None, [], {"volumeId": ("$n1.items.0.id",)}).node(tool)
        assert options["shelf"].values == ("3",) and options["volumeId"].refs == ("$n1.items.0.id",)
