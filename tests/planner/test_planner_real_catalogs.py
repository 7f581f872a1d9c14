"""Planning over catalogs of the shape real REST APIs have (tests/planner/real_catalogs.py): optional
arguments only with evidence, identifier lookups chained, values in the declared format, `needs_input`
instead of invented values. The scripted fake model stands in for the engine: these tests check what the
planner offers it (grammars, prompts) and what it does with the answers."""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import date
from typing import Any

import pytest

from planner.ambient import ambient_parameters
from planner.argkinds import classify
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.dates import DateFormat, declared_format
from planner.evidence import NodeEvidence
from planner.lexicon import lexicon
from planner.lookups import producers
from planner.service import PlannerService
from planner.similarity import CachedEmbedder
from planner.upstream import Upstream
from planner.values import extract
from tests.fakes.llm import FakePlannerLLM
from tests.planner import real_catalogs as rc
from tests.planner.test_planner_grammar import EVERY_TYPE

TODAY = date(2026, 11, 30)
EMBEDDER: list[CachedEmbedder] = []


@pytest.fixture(autouse=True)
def _embedder(minilm: CachedEmbedder) -> None:
    EMBEDDER[:] = [minilm]


def service(llm: FakePlannerLLM, **overrides: Any) -> PlannerService:
    config = PlannerConfig(today=TODAY, skeleton_agree_score=None, skeleton_min_score=None, skeleton_repeat_score=None,
                           **overrides)  # fmt: skip
    return PlannerService.from_config(config, llm=llm, catalog=ToolCatalog.from_openai(rc.CRM), embedder=EMBEDDER[0])


def plan(svc: PlannerService, request: str, tools: list[dict[str, Any]], tenant: str = "acme") -> Any:
    return asyncio.run(svc.plan(request, tenant=tenant, cache_salt="salt", tools=tools))


def options_of(tools: list[dict[str, Any]], tool: str, request: str, upstream: list[Upstream] | None = None) -> Any:
    values = extract(request, TODAY)
    return NodeEvidence(values, None, upstream or []).node(ToolCatalog.from_openai(tools).get(tool))


# optional arguments ---------------------------------------------------------------------------------
def test_optional_arguments_are_written_only_with_evidence() -> None:
    options = options_of(rc.CRM, "createInvoice", "Invoice ACME 1200 euros, issued March 3, 2027, due in 30 days")
    supported = {name for name, o in options.items() if not o.required and o.supported}
    assert supported == {"currency", "issueDate", "dueDays"}  # notes, sendEmail, taxRate...: nothing says so
    assert options["currency"].values == ("EUR",)  # "euros" names one option clearly
    assert options["issueDate"].values == ("2027-03-03",)  # "Format: YYYY-MM-DD", the year as written
    assert options["dueDays"].values == (30,)  # "30 days"


def test_a_value_goes_to_the_argument_it_is_tied_to_most() -> None:
    options = options_of(rc.CRM, "listInvoices", "List the paid invoices issued after January 5, 2027")
    assert options["issuedAfter"].values == ("2027-01-05",) and not options["issuedBefore"].supported
    assert options["status"].values == ("paid",)


def test_connectors_and_verbs_between_a_name_and_its_value_do_not_weaken_the_tie() -> None:
    text = {"type": "string"}
    contacts = [rc.function("contacts_update", "Update a contact", {"id": text, "first_name": text,
                            "last_name": text, "nickname": text}, ["id"])]  # fmt: skip
    options = options_of(contacts, "contacts_update", "Set the first name to 'Min' and the last name to 'Zhao' for c-17")
    first, last = options["first_name"].values, options["last_name"].values
    assert "Min" in first and "Zhao" not in first and "Zhao" in last and "Min" not in last
    options = options_of(contacts, "contacts_update", "把联系人 c-17 的名改成“敏”，姓改成“赵”。")  # 名 first, 姓 last name
    assert options["first_name"].values == ("敏",) and options["last_name"].values == ("赵",)
    assert not options["nickname"].supported


def test_the_thing_a_tool_acts_on_names_no_text_field_named_after_it() -> None:
    text = {"type": "string"}
    events = [rc.function("events_insert", "Create an event", {"eventType": text, "summary": text}, [])]
    options = options_of(events, "events_insert", "Put an all-day event 'Company offsite' on my calendar")
    assert options["summary"].values == ("Company offsite",) and "Company offsite" not in options["eventType"].values


def test_an_enum_option_is_named_by_its_words_stem_but_not_by_a_naming_word() -> None:
    reasons = {"type": "string", "enum": ["FRAUD", "CUSTOMER REQUEST", "RETURN", "DUPLICATE", "OTHER"]}
    sort = {"type": "string", "enum": ["name", "date"]}
    refund = [rc.function("refund", "Refund a payment", {"payment": {"type": "string"}, "reason": reasons,
                          "sortBy": sort}, ["payment"])]  # fmt: skip
    options = options_of(refund, "refund", "Refund payment P-1 because the customer returned the item")
    assert options["reason"].values == ("RETURN",)
    named = options_of(refund, "refund", "Refund the payment named 'P-1'")
    assert not named["sortBy"].supported and not named["reason"].supported


def test_a_sort_direction_is_named_by_the_phrases_that_say_it() -> None:
    order = {"type": "string", "enum": ["asc", "desc"]}
    sort = {"type": "string", "enum": ["ASCENDING", "DESCENDING"]}
    messages = [rc.function("listMessages", "List the messages of a conversation", {"conversation": {"type": "string"},
                            "order": order, "sort": sort}, ["conversation"])]  # fmt: skip
    newest = options_of(messages, "listMessages", "Show the last 20 messages of conversation C-1, newest first.")
    assert newest["order"].values == ("desc",) and newest["sort"].values == ("DESCENDING",)
    oldest = options_of(messages, "listMessages", "把会话 C-1 的消息按最早的在前列出来")
    assert oldest["order"].values == ("asc",)
    plain = options_of(messages, "listMessages", "Show the messages of conversation C-1 with their descriptions")
    assert not plain["order"].supported and not plain["sort"].supported  # "descriptions" is no "desc"


def test_a_language_code_argument_takes_the_code_of_the_one_language_named() -> None:
    text = {"type": "string"}
    books = [rc.function("searchBooks", "Search books", {"q": text, "langRestrict": {"type": "string", "description":
                         "Restrict results to books with this language code."}, "locale": text}, ["q"])]  # fmt: skip
    assert options_of(books, "searchBooks", "Find books on quantum computing, English only")["langRestrict"].values == ("en",)
    assert options_of(books, "searchBooks", "搜一下“三体”，只要中文的")["langRestrict"].values == ("zh",)
    both = options_of(books, "searchBooks", "Find books on quantum computing in English or French")
    assert not both["langRestrict"].supported and not both["locale"].supported  # two languages: which is unclear


def test_a_media_type_argument_takes_the_type_of_the_one_file_format_named() -> None:
    mime = {"type": "string", "description": "The MIME type of the format requested for this export."}
    export = [rc.function("files_export", "Export a document", {"fileId": {"type": "string"}, "mimeType": mime},
              ["fileId", "mimeType"])]  # fmt: skip
    assert options_of(export, "files_export", "Export file F-17 as PDF")["mimeType"].values == ("application/pdf",)
    assert options_of(export, "files_export", "把文件 F-17 导出成 png")["mimeType"].values == ("image/png",)
    unclear = options_of(export, "files_export", "Export file F-17 as PDF or CSV")["mimeType"]
    assert "application/pdf" not in unclear.values and "text/csv" not in unclear.values  # two formats: unclear


def test_the_first_of_two_dates_joined_by_to_is_the_start_and_a_count_of_things_is_no_thing() -> None:
    stamp = {"type": "number", "description": "Unix timestamp."}
    logs = [rc.function("getActivityLogs", "Get activity logs", {"events": {"type": "string", "description":
                        "Event type(s) to include."}, "start_time": stamp, "end_time": stamp, "limit": {"type": "number",
                        "description": "Maximum number of events to return."}}, [])]  # fmt: skip
    options = options_of(logs, "getActivityLogs", "Pull the activity log for March 1 to March 8, 2027, max 200 events.")
    assert options["start_time"].values == (1803859200,) and options["end_time"].values == (1804464000,)
    assert options["limit"].values == (200,) and not options["events"].supported  # 200 events: no event type "200"
    chinese = options_of(logs, "getActivityLogs", "拉取 2027年3月1日到2027年3月8日的活动日志")
    assert chinese["start_time"].values == (1803859200,) and chinese["end_time"].values == (1804464000,)


def test_a_flag_inside_an_object_and_a_chinese_negation_are_read() -> None:
    flag = {"type": "boolean"}
    link = [rc.function("createLink", "Create a payment link", {"amount": {"type": "number"}, "body": {
        "type": "object", "properties": {"reusable": flag}}, "sendNotifications": flag}, ["amount"])]  # fmt: skip
    from planner.flat_args import flat_catalog

    tool = flat_catalog(ToolCatalog.from_openai(link)).get("createLink")
    options = NodeEvidence(extract("创建一个 299 元的支付链接，可以重复使用，不要发送通知。", TODAY), None, []).node(tool)
    assert options["body.reusable"].values == (True,) and options["sendNotifications"].values == (False,)


def test_a_deprecated_optional_argument_is_never_written() -> None:
    flag = {"type": "boolean"}
    tools = [rc.function("events_insert", "Create an event", {"summary": {"type": "string"},
             "sendNotifications": {**flag, "description": "Deprecated. Please use sendUpdates instead."},
             "notifyGuests": {**flag, "deprecated": True}, "sendUpdates": {"type": "string", "enum": ["all", "none"]}},
             ["summary"])]  # fmt: skip
    options = options_of(tools, "events_insert", "Add 'Review' and send notifications, notify guests, updates none")
    assert not options["sendNotifications"].supported and not options["notifyGuests"].supported
    assert options["sendUpdates"].values == ("none",)



def test_an_argument_the_service_writes_itself_is_never_written() -> None:
    text = {"type": "string"}
    tools = [rc.function("courses_create", "Create a course", {"name": text, "ownerId": text,
             "groupEmail": {**text, "description": "The group's e-mail address. Read-only."},
             "updateTime": {**text, "description": "Time of the most recent update. Output only."},
             "alias": {**text, "readOnly": True}}, ["name"])]  # fmt: skip
    options = options_of(tools, "courses_create", "Create a course 'Biology' with alias bio-10, e-mail bio@school.edu")
    assert not any(options[arg].supported or options[arg].values for arg in ("groupEmail", "updateTime", "alias"))


def test_a_parameter_every_tool_takes_alike_is_about_the_call_and_never_written() -> None:
    call = {"fields": {"type": "string", "description": "Selector specifying which fields to include in a partial response."},
            "prettyPrint": {"type": "boolean", "description": "Returns response with indentations and line breaks."}}  # fmt: skip
    tools = copy.deepcopy(rc.CRM)
    for tool in tools:  # as generated API descriptions put them on every operation
        tool["function"]["parameters"]["properties"].update(copy.deepcopy(call))
    assert ambient_parameters(ToolCatalog.from_openai(tools), lexicon("en")) == {"fields", "prettyPrint"}
    request = "Invoice ACME 1200 euros, fields amount only, pretty print it"
    alone = options_of(tools, "createInvoice", request)
    assert alone["fields"].supported and alone["prettyPrint"].supported  # what the words alone would write
    llm = FakePlannerLLM('{"query": "ACME"}', '{"customerId": "$n1.customers.0.customerId", "amount": 1200}')
    result = plan(service(llm), request, tools)
    invoice = result.attempts[0].grammars[1]["properties"]
    assert "currency" in invoice and not {"fields", "prettyPrint"} & set(invoice)
    # a catalog of searches that all take `limit`: there the word says how many results the user wants
    searches = [rc.function(name, f"Search {name}", {"q": {"type": "string"}, "limit": {"type": "integer"}}, ["q"])
                for name in ("searchCustomers", "searchInvoices", "searchTasks")]  # fmt: skip
    assert ambient_parameters(ToolCatalog.from_openai(searches), lexicon("en")) == frozenset()
    assert ambient_parameters(ToolCatalog.from_openai(rc.CRM), lexicon("en")) == frozenset()


def test_plain_text_goes_to_the_plain_counterpart_of_a_markup_argument_and_markup_to_the_markup_one() -> None:
    text = {"type": "string"}
    vacation = [rc.function("updateVacation", "Update the auto-reply", {"responseSubject": text,
                "responseBodyHtml": text, "responseBodyPlainText": text, "enableAutoReply": {"type": "boolean"}}, [])]  # fmt: skip
    # "text" after a determiner is the noun that names `responseBodyPlainText`, not the verb "to text"
    options = options_of(vacation, "updateVacation", "Turn on my auto-reply with the text 'Back on January 5.'")
    assert options["responseBodyPlainText"].values == ("Back on January 5.",)
    assert not options["responseBodyHtml"].supported
    # a body word names both: plain text is the plain one's ("正文" is glossed "body")
    options = options_of(vacation, "updateVacation", "开启自动回复，主题为“休假中”，正文为“我1月5日回来。”")
    assert options["responseBodyPlainText"].values == ("我1月5日回来。",) and not options["responseBodyHtml"].values
    send = [rc.function("emails_send", "Send an email", {"to": text, "subject": text, "html": text, "text": text}, ["to"])]
    options = options_of(send, "emails_send", "Email ana@x.io with the subject 'Hi' and the body 'See you'")
    assert options["text"].values == ("See you",) and not options["html"].supported
    options = options_of(send, "emails_send", "Email ana@x.io with the subject 'Hi' and the HTML '<h1>Welcome</h1>'")
    assert options["html"].values == ("<h1>Welcome</h1>",) and not options["text"].values


def test_quoted_text_nothing_ties_names_the_thing_itself_not_an_object_inside_it() -> None:
    text = {"type": "string"}
    author = {"type": "object", "properties": {"displayName": text}}
    tools = [rc.function("comments_create", "Create a comment on a file", {"fileId": text, "content": text,
             "author": author}, ["fileId"]),
             rc.function("events_insert", "Create an event", {"body": {"type": "object", "properties": {
                 "summary": text, "organizer": author}}}, [])]  # fmt: skip
    from planner.flat_args import flat_catalog

    views = flat_catalog(ToolCatalog.from_openai(tools))
    comment = NodeEvidence(extract("Comment 'Please review' on file F-12", TODAY), None, []).node(
        views.get("comments_create")
    )
    assert "Please review" not in comment["author.displayName"].values
    event = NodeEvidence(extract("Add 'Review' to my calendar", TODAY), None, []).node(views.get("events_insert"))
    assert event["body.summary"].values == ("Review",) and not event["body.organizer.displayName"].values


def test_an_enum_word_that_names_the_tool_or_two_options_sets_no_option() -> None:
    kinds = {"type": "string", "enum": ["ALL", "BOOKS", "MAGAZINES"]}
    tools = [rc.function("books_volumes_list", "Search for volumes", {"q": {"type": "string"}, "printType": kinds,
             "filter": {"type": "string", "enum": ["full", "partial"]},
             "projection": {"type": "string", "enum": ["FULL", "LITE"]}}, ["q"])]  # fmt: skip
    options = options_of(tools, "books_volumes_list", "Search Google Books for 'Dune' with full details")
    assert not options["printType"].values  # "Books" names what the tool searches, not a print type
    assert not options["filter"].values and not options["projection"].values  # "full" names options of both
    magazines = options_of(tools, "books_volumes_list", "Search magazines about 'sailing'")
    assert magazines["printType"].values == ("MAGAZINES",)


def test_the_longest_option_named_wins_and_an_option_need_not_repeat_its_arguments_name() -> None:
    filters = {"type": "string", "enum": ["ebooks", "free-ebooks", "paid-ebooks", "full"]}
    books = [rc.function("volumes_list", "Search for volumes", {"q": {"type": "string"}, "filter": filters}, ["q"])]
    assert options_of(books, "volumes_list", "Find free ebooks of 'Emma'")["filter"].values == ("free-ebooks",)
    assert options_of(books, "volumes_list", "Find ebooks of 'Emma'")["filter"].values == ("ebooks",)
    shown = {"type": "string", "enum": ["labelShow", "labelShowIfUnread", "labelHide"]}
    listed = {"type": "string", "enum": ["show", "hide"]}
    labels = [rc.function("labels_create", "Create a label", {"name": {"type": "string"}, "labelListVisibility": shown,
              "messageListVisibility": listed}, ["name"])]  # fmt: skip
    hidden = options_of(labels, "labels_create", "Create a label called 'Receipts' and hide it from the label list")
    # "hide" names an option of both; the request says the first one's name ("label list"), so it is that one's
    assert hidden["labelListVisibility"].values == ("labelHide",) and not hidden["messageListVisibility"].supported
    plain = options_of(labels, "labels_create", "Create 'Receipts' and hide it")  # no name said: which is unclear
    assert not plain["labelListVisibility"].supported and not plain["messageListVisibility"].supported


def test_a_value_a_required_argument_takes_is_not_also_an_optional_ones() -> None:
    text = {"type": "string"}
    tools = [rc.function("courses_patch", "Update a course", {"id": {**text, "description": "The course id or alias."},
             "name": {**text, "description": "Name of the course."},
             "courseState": {"type": "string", "enum": ["ACTIVE", "ARCHIVED"]}}, ["id"])]  # fmt: skip
    options = options_of(tools, "courses_patch", "Archive the course d:art-12.")
    assert options["id"].values == ("d:art-12",) and options["courseState"].values == ("ARCHIVED",)
    assert not options["name"].values


def test_an_option_listed_only_in_the_description_is_named_by_its_action() -> None:
    roles = {"type": "string", "description": "The role granted. Valid values are: - owner - writer - commenter - reader"}
    tools = [rc.function("permissions_create", "Share a file", {"fileId": {"type": "string"}, "role": roles,
             "emailAddress": {"type": "string"}}, ["fileId", "role"]),
             rc.function("messages_send", "Send a message", {"text": {"type": "string"},
             "as": {"type": "string", "enum": ["sender", "bot"]}}, ["text"])]  # fmt: skip
    said = {
        "Share file F-1 with ana@example.com so she can edit it": "writer",
        "Give jo@example.com view-only access to file F-1": "reader",
        "Share file F-1 with ana@example.com as an editor": "writer",
        "把文件 F-1 共享给 chen@example.cn，给他评论权限": "commenter",
    }
    for request, role in said.items():
        assert options_of(tools, "permissions_create", request)["role"].values == (role,), request
    assert not options_of(tools, "messages_send", "Send 'Hi' to the team")["as"].values  # the tool's own verb


def test_an_optional_identifier_takes_its_descriptions_keyword_when_the_request_says_it_of_that_argument() -> None:
    owner = {"type": "string", "description": "The owner. One of: the numeric id, the e-mail, or the string literal "
             '`"me"`, indicating the requesting user.'}  # fmt: skip
    state = {"type": "string", "enum": ["ACTIVE", "ARCHIVED"]}
    tools = [rc.function("courses_create", "Create a course", {"name": {"type": "string"}, "ownerId": owner,
             "courseState": state}, [])]  # fmt: skip
    said = {
        "Create a course 'Biology' with me as the owner": ("me",),
        "Set up a new class 'Biology' owned by me": ("me",),
        "新建一门课程“高一化学”，所有者是我": ("me",),
        "Create a course 'Biology' that I own": ("me",),  # the keyword said as the subject of the action
        "Create a course 'Biology' and e-mail me its link": (),  # "me", but nothing says it of the owner
        "Create a course 'Biology' that I can share": (),  # "I", but of another action
    }
    for request, owner_id in said.items():
        options = options_of(tools, "courses_create", request)
        assert options["ownerId"].values == owner_id, request
        assert options["name"].values and not options["courseState"].values, request  # a title is no enum option


def test_a_code_that_opens_a_capitalised_name_is_part_of_the_name_not_an_identifier() -> None:
    tools = [rc.function("searchProjects", "Find projects in a workspace by name.", {"workspaceId": {"type": "string",
             "description": "Globally unique identifier for the workspace."}, "query": {"type": "string"}},
             ["workspaceId", "query"])]  # fmt: skip
    request = "What's in the Q2 Hiring project? (workspace 1201987654321)"
    values = extract(request, TODAY)
    assert {(c.kind, c.value) for c in values.candidates} >= {("phrase", "Q2 Hiring"), ("code", "Q2")}
    assert options_of(tools, "searchProjects", request)["workspaceId"].values == ("1201987654321",)
    assert options_of(tools, "searchProjects", "Look in workspace Q2 now")["workspaceId"].values == ("Q2",)


def test_a_chinese_cue_is_read_by_its_gloss() -> None:
    """The words before a value in a language with a glossary are its English glosses, so a cue ties a
    value to an argument's English name in either language."""
    tools = [rc.function("updateContact", "Update a contact.", {"contactId": {"type": "string"},
             "note": {"type": "string"}}, ["contactId"])]  # fmt: skip
    request = "把文件 Hq3ZtR8pLmN1sV 里的节点 n-417 导出成图片"
    code = next(c for c in extract(request, TODAY).candidates if c.value == "Hq3ZtR8pLmN1sV")
    assert code.cue == "file"  # 文件, by its gloss
    request = "把联系人 C-2041 的备注改成“VIP”"
    options = options_of(tools, "updateContact", request)
    assert options["contactId"].values == ("C-2041",)


def test_a_count_of_the_things_a_list_returns_is_its_size_and_a_measure_is_not() -> None:
    tools = [rc.function("files_list", "Lists the user's files.", {"q": {"type": "string"},
             "pageSize": {"type": "integer"}}, []),
             rc.function("files_create", "Creates a file.", {"name": {"type": "string"},
             "maxSize": {"type": "integer"}}, ["name"])]  # fmt: skip
    said = {
        "Show me the ten most recently modified files": (10,),
        "List up to 50 of my files": (50,),
        "列出我的文件，最多 20 个": (20,),
        "List the files changed within 20 minutes": (),  # a measure
        "List my files for the single send": (),  # a name, not a count
    }
    for request, size in said.items():
        assert options_of(tools, "files_list", request)["pageSize"].values == size, request
    assert not options_of(tools, "files_create", "Create 3 files named 'a'")["maxSize"].values  # not a list


def test_a_size_is_said_by_the_arguments_whole_name_a_limit_word_or_the_plural_of_what_is_listed() -> None:
    """"50 per page" names `per_page` after the number; "the last 10", "max 200" are limit words; a size typed
    `number` counts too; "two levels deep" counts levels, not the versions the tool lists."""
    size = {"type": "number"}
    versions = {"type": "object", "properties": {"versions": {"type": "array", "items": {"type": "object"}}}}
    tools = [
        rc.function("listVersions", "Lists a file's versions.", {"per_page": {"type": "integer"}, "page_size": size,
                    "depth": {"type": "integer"}}, [], versions),
    ]  # fmt: skip
    assert options_of(tools, "listVersions", "Show versions, 50 per page")["per_page"].values == (50,)
    assert options_of(tools, "listVersions", "Show the last 10 versions")["page_size"].values == (10,)
    assert options_of(tools, "listVersions", "Show max 20 of them")["page_size"].values == (20,)
    assert not options_of(tools, "listVersions", "Show the latest version, only two levels deep")["page_size"].values


def test_a_string_timestamp_shown_as_digits_takes_epoch_seconds_and_a_word_after_named_is_a_name() -> None:
    stamp = {"type": "string", "description": "Timestamp to start the window. Example: 1620683817."}
    tag = {"type": "object", "properties": {"name": {"type": "string"}, "notes": {"type": "string"}}}
    tools = [rc.function("cpuMetrics", "CPU metrics of a host.", {"start": stamp}, []),
             rc.function("createTag", "Creates a tag.", {"data": tag}, ["data"])]  # fmt: skip
    assert options_of(tools, "cpuMetrics", "CPU metrics from 2027-01-05 00:00 UTC")["start"].values == ("1799107200",)
    named = plan(service(FakePlannerLLM()), "Create a tag named blocked-by-legal", tools[1:])
    assert named.plan.node("n1").args["data"] == {"name": "blocked-by-legal"}


def test_a_required_id_the_request_ties_a_value_to_is_offered_that_value_only() -> None:
    text = {"type": "string"}
    project = {"type": "string", "description": "Globally unique identifier for the project."}
    tools = [rc.function("postStatus", "Posts a project status.", {"project_gid": project, "title": text}, ["project_gid"])]
    said = options_of(tools, "postStatus", "For project 1204455667788 post a status titled 'Week 6 T-12'")
    assert said["project_gid"].values == ("1204455667788",)


def test_a_word_after_an_address_does_not_tie_it_to_an_argument_named_with_that_word() -> None:
    view = {"type": "string", "description": "Which additional view's permissions to include."}
    tools = [rc.function("files_list", "Lists files.", {"q": {"type": "string"}, "includeForView": view}, [])]
    assert not options_of(tools, "files_list", "Give jo@freelance.dev view-only access")["includeForView"].values
    days = rc.function("invoices_create", "Creates an invoice.", {"dueDays": {"type": "integer"}}, [])
    assert options_of([days], "invoices_create", "Invoice due in 30 days")["dueDays"].values == (30,)  # a number's unit


def test_an_integer_id_is_taken_only_from_a_number_said_of_it_else_looked_up() -> None:
    """`domain_record_id` is an integer: "record 8812" gives it; in "change the www record's TTL to 300" the 300 is
    the TTL's, so the record is looked up by its name."""
    number = {"type": "integer"}
    records = {"type": "object", "properties": {"domain_records": {"type": "array", "items": {"type": "object",
               "properties": {"id": number, "name": {"type": "string"}}}}}}  # fmt: skip
    tools = [
        rc.function("list_records", "Lists a domain's records.", {"domain": {"type": "string"},
                    "name": {"type": "string"}}, ["domain"], records),
        rc.function("update_record", "Updates a domain record.", {"domain": {"type": "string"},
                    "domain_record_id": number, "ttl": number}, ["domain", "domain_record_id"]),
    ]  # fmt: skip
    svc = service(FakePlannerLLM())
    given = plan(svc, "On example.org, set the TTL of domain record 8812 to 300", tools)
    assert given.selection["proposed"] == ["update_record"]
    looked = plan(svc, "On example.org, change the www.example.org record's TTL to 300", tools)
    assert looked.selection["proposed"] == ["list_records", "update_record"]



def test_an_untied_address_goes_to_an_identifier_described_as_taking_one_when_no_address_argument_is_free() -> None:
    user = {"type": "string", "description": "Identifier of the invited user: the numeric id or the email address."}
    tools = [rc.function("invitations_create", "Create an invitation", {"courseId": {"type": "string"},
             "userId": user, "note": {"type": "string"}}, ["courseId"])]  # fmt: skip
    options = options_of(tools, "invitations_create", "Invite li.ming@school.cn to course d:phys-8")
    assert options["userId"].values == ("li.ming@school.cn",) and not options["note"].values

def test_an_optional_id_of_the_thing_an_earlier_node_created_references_it() -> None:
    text = {"type": "string"}
    out = {"type": "object", "properties": {"id": text, "name": text}}
    tools = [
        rc.function("segments_create", "Create a segment", {"name": text}, ["name"], out),
        rc.function("broadcasts_create", "Create a broadcast", {"segment_id": text, "audience_id": text,
                    "subject": text}, ["subject"], out),  # fmt: skip
    ]
    created = Upstream("n1", ToolCatalog.from_openai(tools).get("segments_create"))
    request = "Create a segment 'VIP' and draft a broadcast to it with subject 'Hi'"
    options = options_of(tools, "broadcasts_create", request, [created])
    assert options["segment_id"].refs == ("$n1.id",) and options["segment_id"].supported
    assert not options["audience_id"].supported  # an id of another thing: left out
    assert not options_of(tools, "broadcasts_create", request)["segment_id"].supported  # nothing created it


def test_flags_are_set_by_their_own_words_and_negations() -> None:
    flights = options_of(rc.TRAVEL, "searchFlightOffers", "Non-stop business class flights from BOS to NRT")
    assert flights["nonStop"].values == (True,) and flights["travelClass"].values == ("BUSINESS",)
    customers = options_of(rc.CRM, "searchCustomers", "Search customers named Smith without archived ones")
    assert customers["includeArchived"].values == (False,)
    assert not customers["sortBy"].supported and not customers["limit"].supported


def test_the_grammar_leaves_out_unsupported_optionals_and_closes_typed_values() -> None:
    llm = FakePlannerLLM('{"query": "ACME"}', '{"customerId": "$n1.customers.0.customerId", "amount": 1200}')
    result = plan(service(llm), "Invoice ACME 1200 euros, issued March 3, 2027", rc.CRM)
    invoice = result.attempts[0].grammars[1]["properties"]
    assert set(invoice) == {"customerId", "amount", "currency", "issueDate"}
    assert invoice["issueDate"] == {"enum": ["2027-03-03"]}  # with evidence, an optional argument is written
    assert result.path == "model" and "notes" not in result.plan.node("n2").args


# identifier lookups ---------------------------------------------------------------------------------
def test_a_named_customer_is_looked_up_and_its_id_referenced() -> None:
    llm = FakePlannerLLM('{"query": "ACME"}', '{"customerId": "$n1.customers.0.customerId", "amount": 1200}')
    result = plan(service(llm), "Invoice ACME 1200 euros, issued March 3, 2027", rc.CRM)
    assert result.selection["proposed"] == ["searchCustomers", "createInvoice"]
    grammars = result.attempts[0].grammars
    assert json.dumps(grammars[0]["properties"]["query"]).find('"ACME"') >= 0
    assert grammars[1]["properties"]["customerId"] == {"enum": ["$n1.customers.0.customerId"]}
    assert result.plan.node("n2").args["customerId"] == "$n1.customers.0.customerId"
    assert ("n1", "n2") in result.plan.edges()


def test_an_id_the_request_gives_needs_no_lookup() -> None:
    llm = FakePlannerLLM('{"customerId": "CUS-4711", "amount": 80}')
    result = plan(service(llm), "Invoice customer CUS-4711 for 80 euros", rc.CRM)
    assert result.selection["proposed"] == ["createInvoice"]
    assert "CUS-4711" in json.dumps(result.attempts[0].grammars[0]["properties"]["customerId"])


@pytest.mark.parametrize("plain", [False, True], ids=["output schemas", "descriptions only"])
def test_lookups_are_found_in_any_naming_style_or_by_description(plain: bool) -> None:
    tools = rc.without_outputs(rc.CRM) if plain else rc.CRM
    catalog = ToolCatalog.from_openai(tools)
    found = producers(catalog.get("createInvoice"), "customerId", catalog)
    assert found and found[0].tool == "searchCustomers"
    assert found[0].path == (None if plain else "customers.0.customerId")
    offers = producers(ToolCatalog.from_openai(rc.TRAVEL).get("searchFlightOffers"), "originLocationCode",
                       ToolCatalog.from_openai(rc.TRAVEL))  # fmt: skip
    assert offers[0].tool == "searchLocations" and offers[0].path == "data.0.iataCode"  # "IATA code" described


def test_two_codes_from_one_lookup_get_a_lookup_each_and_two_fields_share_one() -> None:
    llm = FakePlannerLLM()
    svc = service(llm)
    result = plan(svc, "Find flights from Boston to Denver on April 12, 2027 for 2 adults", rc.TRAVEL)
    assert result.selection["proposed"] == ["searchLocations", "searchLocations", "searchFlightOffers"]
    seeds = [lk["seed"] for lk in result.selection["lookups"]]
    assert seeds == ["Boston", "Denver"]
    weather = plan(svc, "Weather forecast for Lisbon from May 2 to May 4, 2027", rc.TRAVEL)
    assert weather.selection["proposed"] == ["geocodePlace", "getForecast"]
    assert [lk["seed"] for lk in weather.selection["lookups"]] == ["Lisbon", "Lisbon"]



def test_a_lookup_that_cannot_find_by_e_mail_is_seeded_with_the_name_and_the_address_stays_the_calls() -> None:
    text = {"type": "string"}
    files = {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "object",
             "properties": {"id": text, "name": text}}}}}  # fmt: skip
    tools = [
        rc.function("files_list", "Lists the user's files.", {"q": {**text, "description": "A query for filtering "
                    "the file results."}, "pageSize": {"type": "integer"}}, [], files),  # fmt: skip
        rc.function("permissions_create", "Creates a permission for a file.", {"fileId": text,
                    "emailAddress": {**text, "description": "The email address of the user."}, "role": text},
                    ["fileId"]),  # fmt: skip
        rc.function("files_delete", "Deletes a file.", {"fileId": text}, ["fileId"]),
    ]
    result = plan(service(FakePlannerLLM()), "Share the 'Q3 Budget' spreadsheet with maria@example.com", tools)
    assert result.selection["proposed"] == ["files_list", "permissions_create"]
    assert [lk["seed"] for lk in result.selection["lookups"]] == ["Q3 Budget"]


def test_a_file_name_is_a_name_to_look_up_never_the_files_id() -> None:
    text = {"type": "string"}
    files = {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "object",
             "properties": {"id": text, "name": text}}}}}  # fmt: skip
    tools = [
        rc.function("files_list", "Lists the user's files.", {"q": text}, [], files),
        rc.function("files_delete", "Deletes a file.", {"fileId": text}, ["fileId"]),
    ]
    values = extract("Permanently delete old_backup_2025.zip from my Drive", TODAY)
    assert [(c.kind, c.value) for c in values.candidates if c.kind == "filename"] == [("filename", "old_backup_2025.zip")]
    result = plan(service(FakePlannerLLM()), "Permanently delete old_backup_2025.zip from my Drive", tools)
    assert result.selection["proposed"] == ["files_list", "files_delete"]
    assert [lk["seed"] for lk in result.selection["lookups"]] == ["old_backup_2025.zip"]

def test_an_id_said_in_the_description_is_found_by_a_search_over_kinds_and_a_code_named_by_another_noun_is_not_it() -> None:
    """`boardKey` is an identifier because its description says so; a search over several kinds of thing, one
    enum argument choosing among them, returns it in its items' `key` (the word the argument calls its id);
    and the number said of the space ("space 88120034") is the space's, so the board is looked up."""
    text = {"type": "string"}
    found = {"type": "object", "properties": {"results": {"type": "array", "items": {"type": "object",
             "properties": {"key": text, "title": text}}}}}  # fmt: skip
    kinds = {"type": "string", "enum": ["board", "card", "member"]}
    board = {"type": "string", "description": "Unique identifier of the board."}
    tools = [
        rc.function("quickFind", "Finds things by title.", {"space": text, "kind": kinds, "text": text}, ["space"], found),
        rc.function("addLane", "Adds a lane to a board.", {"boardKey": board, "title": text}, ["boardKey", "title"]),
    ]
    catalog = ToolCatalog.from_openai(tools)
    assert classify("boardKey", board).is_identifier
    assert producers(catalog.get("addLane"), "boardKey", catalog)[0].path == "results.0.key"
    result = plan(service(FakePlannerLLM()), "Add a lane 'Review' to the Launch Plan board. Our space is 88120034.", tools)
    assert result.selection["proposed"] == ["quickFind", "addLane"]


# declared formats -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("schema", "hint", "expected"),
    [
        ({"type": "string", "format": "date"}, "", "2027-03-03"),
        ({"type": "string", "description": "Issue date. Format: DD/MM/YYYY"}, "date", "03/03/2027"),
        ({"type": "string", "description": "As YYYYMMDD"}, "date", "20270303"),
        ({"type": "string", "format": "date-time"}, "", "2027-03-03T10:30:00"),
        ({"type": "integer", "description": "Unix timestamp of the start"}, "date", 1804069800),
        ({"type": "string"}, "date", "2027-03-03"),
    ],
)
def test_dates_are_written_in_the_declared_format(schema: dict[str, Any], hint: str, expected: Any) -> None:
    fmt = declared_format(schema, hint, lexicon("en"))
    assert isinstance(fmt, DateFormat) and fmt.render("2027-03-03", "10:30") == expected


def test_a_date_written_in_digits_is_kept_where_no_format_is_declared() -> None:
    tools = [rc.function("bookVisit", "Book a visit", {"visitDate": {"type": "string"}}, ["visitDate"])]
    options = options_of(tools, "bookVisit", "Book a visit on 10/05/2023")
    assert options["visitDate"].values == ("10/05/2023", "2023-10-05")


# needs_input, refusals ------------------------------------------------------------------------------
def test_a_missing_required_value_is_a_needs_input_answer_without_calling_the_model() -> None:
    llm = FakePlannerLLM()
    result = plan(service(llm), "Create an invoice for Umbrella Corp", rc.CRM)
    assert result.path == "needs_input" and result.plan is None and llm.history == []
    assert {(m["tool"], m["argument"]) for m in result.missing} == {("createInvoice", "amount")}
    assert result.as_dict()["missing"] == result.missing


def test_an_identifier_is_missing_when_no_tool_returns_it_and_the_request_names_none() -> None:
    tools = [t for t in rc.CRM if t["function"]["name"] in ("createInvoice", "sendEmail")]
    result = plan(service(FakePlannerLLM()), "Invoice ACME 1200 euros", tools)
    assert result.path == "needs_input" and result.missing[0]["argument"] == "customerId"


def test_a_past_date_the_user_wrote_is_reported_not_changed() -> None:
    """On the demo catalog: the year is kept in the grammar, and the business rule's refusal of the
    user's own value is the answer (no retry that would change it, no fallback, no 422)."""
    from tests.planner.helpers import demo_catalog

    llm = FakePlannerLLM('{"origin": "New York", "destination": "London", "date": "2024-08-15"}')
    svc = PlannerService.from_config(PlannerConfig(today=TODAY), llm=llm, catalog=demo_catalog(), embedder=EMBEDDER[0])
    result = asyncio.run(
        svc.plan("Find flights from New York to London on August 15, 2024", tenant="t", cache_salt="s")
    )
    grammar = result.attempts[0].grammars[0]["properties"]
    assert "2024-08-15" in json.dumps(grammar["date"]) and "2027-08-15" not in json.dumps(grammar["date"])
    assert grammar["origin"]["anyOf"][0]["enum"][0] == "New York"  # "from X to Y" says which is which
    assert grammar["destination"]["anyOf"][0]["enum"][0] == "London"
    assert result.path == "needs_input" and len(llm.history) == 1
    assert result.missing[0]["argument"] == "date" and "before today" in result.missing[0]["reason"]


# configuration --------------------------------------------------------------------------------------
def test_the_profile_merges_field_by_field_and_is_typed() -> None:
    from pydantic import ValidationError

    profile = {"grounding": "free", "stages": {"drafts": False, "step_hints": False}}
    mine = PlannerConfig(stages={"drafts": True}, selection={"no_fit_below": 0.3})
    merged = mine.over(profile)
    assert merged.grounding == "free" and merged.stages.drafts is True and merged.stages.step_hints is False
    assert merged.selection.no_fit_below == 0.3
    with pytest.raises(ValidationError):
        PlannerConfig().over({"stages": {"no_such_stage": True}})


def test_stages_off_restore_the_unconstrained_arguments() -> None:
    llm = FakePlannerLLM('{"customerId": "ACME", "amount": 1200}')
    stages = {"evidence": False, "lookups": False, "needs_input": False}
    result = plan(service(llm, stages=stages), "Invoice ACME 1200 euros", rc.CRM)
    assert result.path == "model" and result.selection["proposed"] == ["createInvoice"]
    assert len(llm.history[0]["schema"]["properties"]) == 9  # every argument of createInvoice, optionals nullable


# runaway strings ------------------------------------------------------------------------------------
def test_a_node_cut_off_inside_a_free_string_is_asked_again_with_that_string_bounded() -> None:
    from planner.decoding import bound_runaway
    from planner.llm import Completion

    runaway = Completion('{"query": {"other": "ACME Corp ACME Corp ACME Corp', 100, 512, 9.0, 0.1, "length")
    llm = FakePlannerLLM(runaway, '{"query": "ACME"}', '{"customerId": "$n1.customers.0.customerId", "amount": 80}')
    result = plan(service(llm, max_retries=0), "Invoice ACME 80 euros", rc.CRM)
    assert result.path == "model" and len(llm.history) == 3  # the node once more, not the whole plan
    first, again = llm.history[0]["schema"]["properties"], llm.history[1]["schema"]["properties"]
    assert "maxLength" not in json.dumps(first) and again["query"]["anyOf"][-1]["properties"]["other"]["maxLength"]
    assert again["query"]["anyOf"][0] == first["query"]["anyOf"][0]  # the request's values stay as they were
    assert bound_runaway({"properties": {"a": {"enum": ["x"]}}}, '{"a": "x') is None  # nothing free to bound


def test_a_node_that_runs_away_in_one_argument_after_another_is_bounded_until_it_ends() -> None:
    """The re-asks accumulate: each bounds the argument the last answer was cut off in, so a model that
    rambles in one free string after another still ends (a 135M model on another CPU ran away in a string
    the first re-ask had left free)."""
    from planner.llm import Completion

    tools = [
        {
            "type": "function",
            "function": {"name": "plan_event", "description": "Plan an event", "parameters": EVERY_TYPE},
        }
    ]
    cut = [
        Completion(text, 100, 512, 9.0, 0.1, "length")
        for text in (
            '{"title": "Launch Launch',
            '{"title": "Launch", "count": 40, "ratio": 0.5, "flag": true, "mode": "fast", "tags": ["beta beta beta',
        )
    ]
    done = '{"title": "Launch", "count": 40, "ratio": 0.5, "flag": true, "mode": "fast", "tags": ["beta"]}'
    llm = FakePlannerLLM(*cut, done)
    result = plan(
        service(llm, max_retries=0),
        "Plan an event titled 'Launch' for 40 people at ratio 0.5, tagged 'beta', from March 3, 2021.",
        tools,
    )
    assert result.path == "model" and result.plan is not None and len(llm.history) == 3
    second, third = (json.dumps(call["schema"]["properties"]) for call in llm.history[1:])
    assert '"maxLength"' in json.dumps(llm.history[1]["schema"]["properties"]["title"])
    assert "maxLength" not in json.dumps(llm.history[1]["schema"]["properties"]["tags"])
    assert second.count("maxLength") < third.count("maxLength")  # the tags' strings bounded too, the title kept
    assert result.plan.node("n1").args["window"] == {}  # a required object nothing in the request fills: empty


# memory that transfers ------------------------------------------------------------------------------
FLIGHTS_SOLVED = {
    "nodes": [
        {"id": "n1", "tool": "searchLocations", "args": {"keyword": "Boston"}},
        {"id": "n2", "tool": "searchLocations", "args": {"keyword": "Denver"}},
        {
            "id": "n3",
            "tool": "searchFlightOffers",
            "args": {
                "originLocationCode": "$n1.data.0.iataCode",
                "destinationLocationCode": "$n2.data.0.iataCode",
                "departureDate": "2027-04-12",
                "adults": 2,
                "currencyCode": "EUR",
            },
        },
    ]
}


def test_a_solved_plan_is_refilled_from_a_request_of_the_same_shape() -> None:
    from contract.demonstrations import Demonstration
    from planner.transfer import carry_values, template

    solved = Demonstration("Find flights from Boston to Denver on April 12, 2027 for 2 adults", FLIGHTS_SOLVED)
    for request in ("Find flights from Paris to Rome on June 9, 2027 for 3 adults",
                    "I need flights to Rome from Paris, 3 adults, June 9"):  # fmt: skip
        carried = carry_values(solved, extract(request, TODAY), TODAY)
        assert carried[0] == {"keyword": "Paris"} and carried[1] == {"keyword": "Rome"}
        assert carried[2]["departureDate"] == "2027-06-09" and carried[2]["adults"] == 3
        assert carried[2]["originLocationCode"] == "$n1.data.0.iataCode"
        assert carried[2]["currencyCode"] == "EUR"  # a constant of the structure the user chose
    assert template(extract(solved.request, TODAY)) == template(extract("Find flights from Oslo to Rome on "
                                                                        "May 1, 2027 for 4 adults", TODAY))  # fmt: skip
    nearby = [template(extract(f"Find airports within 20 km of {point}.", TODAY)) for point in
              ("40.7128,-74.0060", "48.8584, 2.2945")]  # fmt: skip
    assert nearby[0] == nearby[1] and nearby[0].endswith("of <point>.")


def test_an_address_is_refilled_only_by_an_address_of_its_shape() -> None:
    """The demonstration's attendee e-mail has no counterpart in a request that names no e-mail: the quoted
    title after the same verb ("add") is a title, never the address."""
    from contract.demonstrations import Demonstration
    from planner.transfer import carry_values

    plan = {"nodes": [{"id": "n1", "tool": "insert", "args": {"summary": "Call with Priya",
                                                              "attendee": "priya@example.com"}}]}  # fmt: skip
    demo = Demonstration("Add priya@example.com to 'Call with Priya'", plan)
    assert "attendee" not in carry_values(demo, extract("Add 'Quarterly review' to my calendar", TODAY), TODAY)[0]
    carried = carry_values(demo, extract("Add li@example.cn to 'Weekly sync'", TODAY), TODAY)[0]
    assert carried["attendee"] == "li@example.cn"


def test_the_tenants_corrected_plan_teaches_the_structure_and_its_arguments() -> None:
    from contract.demonstrations import Demonstration
    from planner.demos import EmbeddingDemonstrations

    memory = EmbeddingDemonstrations(
        [Demonstration("Find flights from Boston to Denver on April 12, 2027 for 2 adults", FLIGHTS_SOLVED, 0, "acme")],
        EMBEDDER[0],
    )
    offer = {"originLocationCode": "$n1.data.0.iataCode", "destinationLocationCode": "$n2.data.0.iataCode",
             "departureDate": "2027-06-09", "adults": 3, "currencyCode": "EUR"}  # fmt: skip
    llm = FakePlannerLLM('{"keyword": "Paris"}', '{"keyword": "Rome"}', json.dumps(offer))
    config = PlannerConfig(today=TODAY)
    svc = PlannerService.from_config(config, llm=llm, catalog=ToolCatalog.from_openai(rc.TRAVEL), demos=memory,
                                     embedder=EMBEDDER[0])  # fmt: skip
    result = asyncio.run(svc.plan("Flights from Paris to Rome on June 9, 2027, 3 adults", tenant="acme", cache_salt="s",
                                  tools=rc.TRAVEL))  # fmt: skip
    assert result.path == "model" and result.attempts[0].tools_from == "skeleton"
    assert len(llm.history) == 3  # the skeleton gives the tools: one call per node
    keyword = result.attempts[0].grammars[0]["properties"]["keyword"]
    assert keyword["anyOf"][0]["enum"][0] == "Paris"
    offers = result.attempts[0].grammars[2]["properties"]
    assert offers["originLocationCode"] == {"enum": ["$n1.data.0.iataCode"]}  # the skeleton's data flow
    assert offers["currencyCode"] == {"enum": ["EUR"]}  # written as it was taught
    assert offers["departureDate"]["enum"] == ["2027-06-09"] and offers["adults"]["anyOf"][0]["enum"][0] == 3
    other = FakePlannerLLM()
    svc.llm = svc.decoder.llm = other
    asyncio.run(svc.plan("Flights from Paris to Rome on June 9, 2027, 3 adults", tenant="globex", cache_salt="t",
                         tools=rc.TRAVEL))  # fmt: skip
    assert "Boston" not in "".join(other.prompts)  # another tenant never sees acme's memory


def test_a_demonstrations_optional_choice_is_not_carried_to_a_request_that_does_not_ask_for_it() -> None:
    """An optional literal is refilled only from the value at its role ("5 offers at most" is no count in "3
    adults and 1 child"), and one the demonstration's words asked for ("non-stop" → `nonStop: true`) is
    not written for a request without those words; a constant no word asked for (`currencyCode: EUR`) is."""
    from contract.demonstrations import Demonstration
    from planner.demos import EmbeddingDemonstrations
    from planner.transfer import carry_values

    taught = json.loads(json.dumps(FLIGHTS_SOLVED))
    taught["nodes"][2]["args"].update({"nonStop": True, "max": 5})
    demo = Demonstration("Find non-stop flights from Boston to Denver on April 12, 2027 for 2 adults, 5 offers at most",
                         taught, 0, "acme")  # fmt: skip
    request = "Find flights from Paris to Rome on June 9, 2027 for 3 adults and 1 child"
    catalog = ToolCatalog.from_openai(rc.TRAVEL)
    assert carry_values(demo, extract(request, TODAY), TODAY)[2]["max"] == 1  # by rank alone: a size never asked
    assert "max" not in carry_values(demo, extract(request, TODAY), TODAY, catalog)[2]
    memory = EmbeddingDemonstrations([demo], EMBEDDER[0])
    offer = {"originLocationCode": "$n1.data.0.iataCode", "destinationLocationCode": "$n2.data.0.iataCode",
             "departureDate": "2027-06-09", "adults": 3}  # fmt: skip
    llm = FakePlannerLLM('{"keyword": "Paris"}', '{"keyword": "Rome"}', json.dumps(offer))
    svc = PlannerService.from_config(PlannerConfig(today=TODAY), llm=llm, catalog=catalog, demos=memory,
                                     embedder=EMBEDDER[0])  # fmt: skip
    result = asyncio.run(svc.plan(request, tenant="acme", cache_salt="s", tools=rc.TRAVEL))
    assert result.attempts[0].tools_from == "skeleton"
    offers = result.attempts[0].grammars[2]["properties"]
    assert offers["currencyCode"] == {"enum": ["EUR"]}  # the structure's constant
    assert "nonStop" not in offers and "max" not in offers  # the other user's choices


# Chinese on the demo domain -------------------------------------------------------------------------
def test_a_chinese_request_plans_on_the_demo_domain() -> None:
    """configs/lexicon/zh.yaml (dates, connectives, a glossary for the English embedding model) and the
    travel pack's Chinese city names and goal words."""
    from tests.planner.helpers import demo_catalog

    flight = '{"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20"}'
    llm = FakePlannerLLM(flight, '{"city": "Hangzhou", "date": "2027-06-20"}')
    svc = PlannerService.from_config(PlannerConfig(today=TODAY), llm=llm, catalog=demo_catalog(), embedder=EMBEDDER[0])
    result = asyncio.run(svc.plan("查询6月20日从上海到杭州的航班，并查一下杭州当天的天气", tenant="t", cache_salt="s"))
    assert result.path == "model" and [n.tool for n in result.plan.nodes] == ["search_flights", "get_weather"]
    first = result.attempts[0].grammars[0]["properties"]
    assert (
        first["origin"]["anyOf"][0]["enum"][0] == "Shanghai"
        and first["destination"]["anyOf"][0]["enum"][0] == "Hangzhou"
    )
    assert first["date"]["enum"] == ["2027-06-20"]
    weather = result.attempts[0].grammars[1]["properties"]
    assert weather["date"]["enum"] == ["2027-06-20"]  # "当天" (that day): the date of the step before


def test_a_list_the_request_writes_can_be_an_optional_arguments_evidence() -> None:
    tools = [rc.function("tagTask", "Tag a task", {"title": {"type": "string"},
                         "labels": {"type": "array", "items": {"type": "string"}}}, ["title"])]  # fmt: skip
    options = options_of(tools, "tagTask", "Tag the task 'Ship it' with labels ['urgent', 'ops'] and labels ['x']")
    assert options["labels"].supported and ["urgent", "ops"] in options["labels"].values


# shapes of a media-service catalog (kebab-case operations, snake_case parameters) -------------------------
TEXT = {"type": "string"}
FLAG = {"type": "boolean"}


def test_a_deprecated_tool_yields_to_the_live_one_its_description_names() -> None:
    """The importer writes OpenAPI `deprecated: true` as a description opening "Deprecated."; one that names
    its replacement among the candidates is never proposed over it, and still chosen where it alone fits."""
    old = rc.function("add-songs-to-list", "Deprecated. Use [Add Items To List](/ops/add-items-to-list) instead. "
                      "Adds songs to a list.", {"list_id": TEXT, "uris": TEXT}, ["list_id"])  # fmt: skip
    new = rc.function("add-items-to-list", "Adds one or more items to a list.", {"list_id": TEXT, "uris": TEXT},
                      ["list_id"])  # fmt: skip
    other = rc.function("get-list", "Gets a list.", {"list_id": TEXT}, ["list_id"])
    svc = service(FakePlannerLLM())
    request = "Add the item tune:song:77aa to my list ls-4411"
    assert plan(svc, request, [old, new, other]).selection["proposed"] == ["add-items-to-list"]
    assert plan(svc, request, [old, other]).selection["proposed"] == ["add-songs-to-list"]


def test_a_uri_argument_takes_an_absolute_uri_of_any_scheme_and_a_plural_kind_word_is_that_kind() -> None:
    tools = [rc.function("queue-add", "Adds an item to the queue.", {"uri": TEXT, "device_id": TEXT}, ["uri"])]
    assert classify("uris", TEXT).kind == "url" and classify("emails", TEXT).kind == "email"
    options = options_of(tools, "queue-add", "Queue tune:song:77aaB9 next")
    assert options["uri"].values == ("tune:song:77aaB9",)
    assert "team:payments" not in options_of(tools, "queue-add", "Queue team:payments next")["uri"].values


def test_the_steps_one_address_fills_the_tools_one_optional_argument_of_its_kind() -> None:
    email = {"type": "string", "format": "email"}
    one = [rc.function("members-add", "Adds a member to a team.", {"team": TEXT, "contact": email, "note": TEXT},
                       ["team"])]  # fmt: skip
    options = options_of(one, "members-add", "Add ana@corp.io to team blue")
    assert options["contact"].values == ("ana@corp.io",) and not options["note"].supported
    # no word of `configuration_url` before the URL ("to" ties it to nothing): the tool's one URL argument
    url = {"type": "string", "format": "uri"}
    method = {"type": "string", "enum": ["GET", "POST"]}
    hook = [rc.function("webhooks-create", "Creates a webhook of a conversation.", {"conversation_sid": TEXT,
            "configuration_url": url, "configuration_method": method}, ["conversation_sid"])]  # fmt: skip
    options = options_of(
        hook, "webhooks-create", "Send the events of conversation CH1b2c3d4 to https://hooks.acme.dev/x by POST"
    )
    assert options["configuration_url"].values == ("https://hooks.acme.dev/x",)
    assert options["configuration_method"].values == ("POST",)


def test_a_one_word_flag_is_false_when_the_request_says_its_opposite() -> None:
    tools = [rc.function("create-list", "Creates a list.", {"name": TEXT, "public": FLAG, "collaborative": FLAG}, [])]
    assert options_of(tools, "create-list", "Create a private list called 'Late'")["public"].values == (False,)
    assert options_of(tools, "create-list", "Create a list called 'Late' that is not private")["public"].values == (
        True,
    )
    assert not options_of(tools, "create-list", "Create a private list called 'Late'")["collaborative"].supported


def test_a_size_is_not_a_number_a_unit_follows_and_a_limit_word_may_come_after_it() -> None:
    listing = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object"}}}}
    tools = [rc.function("get-top-songs", "Gets the user's top songs.", {"limit": {"type": "integer"},
                         "time_range": TEXT}, [], listing)]  # fmt: skip
    size = {
        "Show my top songs of the last four weeks": (),  # a measure of time
        "Show my top songs, 10 at most": (10,),
        "Find songs for 'rain', 3 results": (3,),
    }
    for request, expected in size.items():
        assert options_of(tools, "get-top-songs", request)["limit"].values == expected, request


def test_a_verb_ending_in_an_arguments_name_does_not_name_it() -> None:
    tools = [rc.function("change-list-details", "Changes a list's details.", {"list_id": TEXT, "name": TEXT,
                         "description": TEXT}, ["list_id"])]  # fmt: skip
    options = options_of(tools, "change-list-details", "Rename my list ls-4411 to 'Gym Mix'")
    assert options["name"].values == ("Gym Mix",) and not options["description"].supported


def test_a_list_of_identifiers_takes_the_ids_said_of_it_and_a_list_of_options_the_options_named() -> None:
    ids = {"type": "array", "items": {"type": "string"}}
    tools = [
        rc.function("transfer-playback", "Moves playback to a device.", {"device_ids": ids, "play": FLAG}, []),
        rc.function("filters-create", "Creates a mail filter.", {"add_label_ids": ids, "remove_label_ids": ids}, []),
        rc.function(
            "search",
            "Searches the catalog.",
            {"q": TEXT, "type": {"type": "array", "items": {"type": "string", "enum": ["album", "artist", "track"]}}},
            ["q", "type"],
        ),  # fmt: skip
    ]
    moved = options_of(tools, "transfer-playback", "Move playback to device d0a1b2c3e4f5 and play there")
    assert moved["device_ids"].values == (["d0a1b2c3e4f5"],)
    labelled = options_of(tools, "filters-create", "Filter mail from a@b.io under the label Label_12")
    assert not labelled["add_label_ids"].supported and not labelled["remove_label_ids"].supported
    assert options_of(tools, "search", "Search for albums by Nina Simone")["type"].values == (["album"],)
    assert not options_of(tools, "search", "Search for Nina Simone")["type"].values  # none named: the model's


def test_a_name_word_between_two_values_names_the_one_after_it() -> None:
    """"droplets tagged env:staging": the tag is the code the word opens, not the noun it follows; a tag of
    words a colon joins is one value; "50 per page" names the number, not the tag before the comma."""
    tools = [rc.function("list-droplets", "Lists droplets.", {"tag_name": TEXT, "per_page": {"type": "integer"}}, [])]
    options = options_of(tools, "list-droplets", "list droplets tagged env:staging, 50 per page")
    assert options["tag_name"].values == ("env:staging",) and options["per_page"].values == (50,)


def test_a_negation_is_no_value_of_a_free_text_argument() -> None:
    tools = [rc.function("share-file", "Shares a file.", {"file_id": TEXT, "email_address": TEXT,
                         "email_message": TEXT}, ["file_id"])]  # fmt: skip
    options = options_of(tools, "share-file", "Share file 1aB9xYz with jo@freelance.dev without emailing her")
    assert not options["email_message"].supported


def test_a_change_names_its_field_before_the_thing_and_its_new_value_after_to() -> None:
    """"Change the location of my 'Budget sync' meeting to Room 4B": the new location is "Room 4B" (a name with
    its number), the quoted title names the meeting, and neither a shallower number argument the value cannot
    fill (`maxAttendees` tied by "to") nor a field named like the word after the title (`meetingCode`) takes it."""
    from planner.flat_args import flat_tool

    body = {"type": "object", "properties": {"location": TEXT, "conference": {"type": "object",
            "properties": {"meetingCode": TEXT}}}}  # fmt: skip
    tools = [rc.function("events-patch", "Updates an event.", {"eventId": TEXT, "maxAttendees": {"type": "integer"},
                         "body": body}, ["eventId"])]  # fmt: skip
    tool = flat_tool(ToolCatalog.from_openai(tools).get("events-patch"))
    request = "Change the location of my 'Budget sync' meeting to Room 4B."
    options = NodeEvidence(extract(request, TODAY), None, []).node(tool)
    assert options["body.location"].values == ("Room 4B",)
    assert not options["body.conference.meetingCode"].supported


def test_a_comma_separated_list_takes_the_ids_joined_and_an_explained_option_its_meaning() -> None:
    """A string declared "A comma-separated list of the IDs" is offered the request's ids joined, in order; an
    option the description explains in parentheses is chosen by the explanation's words ("the last four
    weeks" → `short_term`, "approximately last 4 weeks"), a word of two explanations ("last") deciding nothing."""
    ids = {"type": "string", "description": "A comma-separated list of the artist IDs. Maximum: 50 IDs."}
    span = {"type": "string", "description": "Over what time frame. Valid values: `long_term` (calculated from ~1 "
            "year of data), `medium_term` (approximately last 6 months), `short_term` (approximately last 4 weeks)."
            " Default: `medium_term`."}  # fmt: skip
    tools = [
        rc.function("get-artists", "Gets several artists.", {"ids": ids}, ["ids"]),
        rc.function("get-top-songs", "Gets the user's top songs.", {"time_range": span}, []),
    ]
    got = options_of(tools, "get-artists", "Get the artists 0TnOYISbd1XYRBk9myaseg and 3WrFJ7ztbogyGnTHbHJFl2")
    assert got["ids"].values[0] == "0TnOYISbd1XYRBk9myaseg,3WrFJ7ztbogyGnTHbHJFl2"
    spans = {
        "Show my top songs of the last four weeks": ("short_term",),
        "My top songs over the past year": ("long_term",),
        "My top songs of the last months": ("medium_term",),  # "last" is in two explanations, "months" in one
        "Show my top songs": (),
    }
    for request, expected in spans.items():
        assert options_of(tools, "get-top-songs", request)["time_range"].values == expected, request


def test_a_country_code_argument_takes_the_code_of_the_country_named() -> None:
    """A description whose first sentence declares an ISO 3166-1 code takes the country the step names, in the
    declared alpha form (pycountry's names and the lexicon's aliases); a filter that declares such codes
    later and writes them in a syntax of its own (`country:fr`) takes the code in that syntax, several
    joined as its example joins them; no country named, nothing written."""
    market = {"type": "string", "description": "An ISO 3166-1 alpha-2 country code. If given, only content "
              "available in that market is returned."}  # fmt: skip
    three = {"type": "string", "description": "The ISO 3166-1 alpha-3 country code of the shop."}
    components = {"type": "string", "description": "A grouping of places. Countries must be passed as an ISO "
                  "3166-1 Alpha-2 compatible country code, as country:fr."}  # fmt: skip
    tools = [rc.function("search", "Searches the catalog.", {"q": TEXT, "market": market, "shop_country": three,
                         "components": components}, ["q"])]  # fmt: skip
    germany = options_of(tools, "search", "Search for 'Dark' available in Germany")
    assert germany["market"].values == ("DE",) and germany["shop_country"].values == ("DEU",)
    assert germany["components"].values == ("country:de",)  # the filter's own syntax, as its example writes it
    assert options_of(tools, "search", "Search for 'Dark' in the UK")["market"].values == ("GB",)
    assert not options_of(tools, "search", "Search for 'Dark'")["market"].supported
    joined = {"type": "string", "description": "Countries as ISO 3166-1 alpha-2 codes.",
              "examples": ["country:fr|country:es"]}  # fmt: skip
    places = [rc.function("autocomplete", "Autocomplete places.", {"input": TEXT, "components": joined}, ["input"])]
    both = options_of(places, "autocomplete", "Find 'Saint' in France or Spain")
    assert both["components"].values == ("country:fr|country:es",)
    assert not options_of(places, "autocomplete", "Find 'Saint'")["components"].supported


def test_a_range_said_between_two_values_fills_its_start_and_its_end() -> None:
    """"between June 1 and June 30, 2027": the first date is the range's start (`due_on_after`), the one
    after "and" its end (`due_on_before`); the date-time twins a word apart (`due_at_after`) stay unwritten
    for dates said without a clock; numbers the same way (`minSeats`, `maxSeats`)."""
    date_only = {"type": "string", "format": "date"}
    moment = {"type": "string", "format": "date-time"}
    tools = [
        rc.function("searchTasks", "Search the tasks of a workspace.", {
            "text": {"type": "string"}, "due_on_after": date_only, "due_on_before": date_only,
            "due_at_after": moment, "due_at_before": moment, "limit": {"type": "integer"}}, []),
        rc.function("searchRooms", "Search meeting rooms.", {
            "minSeats": {"type": "integer"}, "maxSeats": {"type": "integer"}}, []),
    ]  # fmt: skip
    options = options_of(tools, "searchTasks", "Search for milestones due between June 1 and June 30, 2027.")
    assert options["due_on_after"].values == ("2027-06-01",)
    assert options["due_on_before"].values == ("2027-06-30",)
    assert not options["due_at_after"].supported and not options["due_at_before"].supported
    rooms = options_of(tools, "searchRooms", "Find rooms with between 10 and 20 seats")
    assert rooms["minSeats"].values == (10,) and rooms["maxSeats"].values == (20,)


def test_a_count_right_after_a_verb_asking_for_things_is_the_lists_size() -> None:
    """"Show me 5 cinemas near …": what is asked for is a category of what the tool lists (localities), not
    a word of its name; the count is still the list's size. Not a measure ("find 5 km of road")."""
    tools = [rc.function("localitiesNearby", "Nearby points of interest.", {
        "location": {"type": "string"}, "limit": {"type": "integer"}}, ["location"])]  # fmt: skip
    assert options_of(tools, "localitiesNearby", "Show me 5 cinemas near 48.8584,2.2945")["limit"].values == (5,)
    assert options_of(tools, "localitiesNearby", "Find 3 pharmacies near 48.85,2.35")["limit"].values == (3,)
    assert not options_of(tools, "localitiesNearby", "Find 5 km of trails near 48.85,2.35")["limit"].values
    # Chinese counts things with a classifier after the number ("20 张"), a measure takes a unit ("5 公里")
    albums = [rc.function("get-new-releases", "Get a list of new album releases.", {
        "limit": {"type": "integer"}, "offset": {"type": "integer"}}, [])]  # fmt: skip
    assert options_of(albums, "get-new-releases", "给我看看最新发行的专辑，20 张就行。")["limit"].values == (20,)
    assert not options_of(albums, "get-new-releases", "给我看看最新发行的专辑。")["limit"].supported
    assert not options_of(tools, "localitiesNearby", "找 48.85,2.35 附近 5 公里内的药店")["limit"].values


def test_untied_quoted_text_fills_a_required_content_argument_and_a_numbered_id_is_text() -> None:
    """'Leave a comment on file 8fJq…: "Can we …?"': the quote nothing ties goes to the required content
    argument (`message`), not left for the model to copy the file key into; "reply to comment 93102" writes
    the optional string id as "93102"."""
    text = {"type": "string"}
    tools = [rc.function("postComment", "Posts a new comment on the file.", {"file_key": text, "message": {
        "type": "string", "description": "The text contents of the comment to post."}, "comment_id": {
        "type": "string", "description": "The ID of the comment to reply to, if any."}}, ["file_key", "message"])]  # fmt: skip
    options = options_of(tools, "postComment", 'Leave a comment on file 8fJqW2xLk0bT: "Can we bump the contrast?"')
    assert options["message"].values == ("Can we bump the contrast?",) and not options["comment_id"].supported
    reply = options_of(tools, "postComment", "reply to comment 93102 on file 8fJqW2xLk0bT with 'Fixed in v3'")
    assert reply["comment_id"].values == ("93102",) and reply["message"].values == ("Fixed in v3",)
    # a required title is not filled so: its value comes from ties the placement does not see
    lyrics = [rc.function("find_song_lyrics", "Find the lyrics of a song", {"title": text, "artist": text},
                          ["title", "artist"])]  # fmt: skip
    song = options_of(lyrics, "find_song_lyrics", "Get the lyrics of the song 'Imagine' by 'John Lennon'")
    assert "John Lennon" not in song["title"].values


def test_since_and_before_fill_the_min_and_max_bounds_of_a_range() -> None:
    """"updated since February 1, 2027 (UTC)" is the lower bound `updatedMin` (Google's naming of a range's
    ends), at the start of that day in the zone said; "before" is the upper bound `updatedMax`."""
    moment = {"type": "string", "format": "date-time"}
    tools = [rc.function("annotations_list", "Retrieves a list of annotations.", {
        "updatedMin": moment, "updatedMax": moment, "maxResults": {"type": "integer"}}, [])]  # fmt: skip
    since = options_of(tools, "annotations_list", "Show my notes updated since February 1, 2027 (UTC).")
    assert since["updatedMin"].values == ("2027-02-01T00:00:00Z",) and not since["updatedMax"].supported
    before = options_of(tools, "annotations_list", "Show my notes updated before February 1, 2027 (UTC).")
    assert before["updatedMax"].values == ("2027-02-01T00:00:00Z",) and not before["updatedMin"].supported


def test_a_measure_is_written_in_the_unit_the_argument_declares() -> None:
    """"within 5 km" for a radius "Unit in meters" is 5000; "2 hours" for a duration "in seconds" is 7200; a
    timestamp "in seconds since 1970" is no duration; two arguments measuring lengths take neither."""
    meters = {"type": "number", "description": "Unit in meters. To bias the results within a circular area."}
    tools = [
        rc.function("storeSearch", "Search stores.", {"radius": meters, "lat": {"type": "number"}}, []),
        rc.function("muteChannel", "Mute a channel.", {
            "channel": {"type": "string"},
            "duration": {"type": "integer", "description": "How long to mute, in seconds."},
            "until": {"type": "integer", "description": "Unix timestamp in seconds since 1970."}}, ["channel"]),
        rc.function("route", "A route.", {"radius": meters, "accuracy": {"type": "integer",
                    "description": "Accuracy in meters."}}, []),
    ]  # fmt: skip
    assert options_of(tools, "storeSearch", "Find stores within 5 km of 45.5,-73.5")["radius"].values == (5000,)
    assert options_of(tools, "storeSearch", "Find stores within 2 miles")["radius"].values == (3218.688,)
    assert not options_of(tools, "storeSearch", "Find 5 stores")["radius"].supported  # a count, no unit
    muted = options_of(tools, "muteChannel", "Mute #ops for 2 hours")
    assert muted["duration"].values == (7200,) and not muted["until"].supported
    assert not options_of(tools, "route", "A route within 5 km")["radius"].supported  # which length is it?
