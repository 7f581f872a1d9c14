"""The OpenAPI importer on small hand-written documents: each convention, each bound, hostile input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contract.errors import PlanstackBaseError
from planner.catalog import ToolCatalog
from serving.errors import error_body
from serving.toolsets import ImportLimits, OpenApiInvalidError, import_openapi

OK = {"200": {"description": "ok"}}


def doc(paths: dict[str, Any], *, version: str = "3.0.3", components: dict[str, Any] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"openapi": version, "info": {"title": "Shop", "version": "1"}, "paths": paths}
    if components:
        document["components"] = components
    return document


def tools_of(document: dict[str, Any], limits: ImportLimits | None = None) -> dict[str, Any]:
    return {t.name: t for t in import_openapi(json.dumps(document), limits).tools}


CRM = doc(
    {
        "/customers/{customerId}/invoices": {
            "parameters": [{"name": "customerId", "in": "path", "required": True, "schema": {"type": "string"}}],
            "post": {
                "operationId": "invoices.create",
                "summary": "Create an invoice",
                "description": "Drafts an invoice for a customer.",
                "parameters": [
                    {"name": "currency", "in": "query", "schema": {"type": "string", "enum": ["EUR", "USD"]}},
                    {"name": "X-Request-Id", "in": "header", "schema": {"type": "string"}},
                    {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                    {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                    {"name": "api_key", "in": "query", "schema": {"type": "string"}},
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["amount"],
                                "properties": {
                                    "amount": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                                    "currency": {"type": "string", "description": "Overrides the query value."},
                                    "issueDate": {
                                        "type": "string",
                                        "format": "date",
                                        "description": "Issue date.",
                                        "example": "2027-03-03",
                                    },
                                    "dueDays": {"type": "integer", "default": 30, "minimum": 1, "maximum": 90},
                                    "id": {"type": "string", "readOnly": True},
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "201": {
                        "description": "created",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "invoiceId": {"type": "string"},
                                        "secret": {"type": "string", "writeOnly": True},
                                    },
                                }
                            }
                        },
                    }
                },
            },
        },
        "/customers": {
            "get": {"responses": OK},
            "delete": {"operationId": "invoices create", "responses": OK},
        },
    },
    components={"securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "api_key"}}},
)


def test_parameters_and_a_json_object_body_become_arguments_under_the_documented_conventions() -> None:
    result = import_openapi(json.dumps(CRM))
    tools = {t.name: t for t in result.tools}
    assert set(tools) == {"invoices_create", "invoices_create_2"}
    assert result.skipped == ("GET /customers: no operationId",)
    created = tools["invoices_create"]
    function = created.tool["function"]
    assert function["description"] == "Create an invoice. Drafts an invoice for a customer."
    params = function["parameters"]
    assert list(params["properties"]) == [
        "customerId",
        "currency",
        "X_Request_Id",
        "amount",
        "body_currency",
        "issueDate",
        "dueDays",
    ]  # Authorization, the cookie, the apiKey credential and the readOnly `id` are not arguments
    assert params["required"] == ["customerId", "amount"]
    assert params["properties"]["amount"]["exclusiveMinimum"] == 0 and "minimum" not in params["properties"]["amount"]
    issue = params["properties"]["issueDate"]
    assert issue["format"] == "date" and issue["examples"] == ["2027-03-03"]
    assert "Format: date." in issue["description"] and "Example: 2027-03-03." in issue["description"]
    assert "One of: EUR, USD." in params["properties"]["currency"]["description"]
    due = params["properties"]["dueDays"]["description"]
    assert "Default: 30." in due and "Minimum: 1." in due and "Maximum: 90." in due
    assert function["output_schema"] == {"type": "object", "properties": {"invoiceId": {"type": "string"}}}
    binding = created.binding
    assert binding.method == "POST" and binding.path == "/customers/{customerId}/invoices"
    assert binding.body == "properties" and binding.operation_id == "invoices.create"
    wire = {(a.argument, a.location, a.name) for a in binding.arguments}
    assert ("X_Request_Id", "header", "X-Request-Id") in wire
    assert ("body_currency", "body", "currency") in wire and ("currency", "query", "currency") in wire
    assert ToolCatalog.from_openai(result.openai_tools()).names() == ["invoices_create", "invoices_create_2"]


def test_an_optional_body_makes_no_argument_required_and_a_non_object_body_is_one_argument() -> None:
    tools = tools_of(
        doc(
            {
                "/notes": {
                    "post": {
                        "operationId": "addNote",
                        "requestBody": {
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["text"],
                                        "properties": {"text": {"type": "string"}},
                                    }
                                }
                            }
                        },
                        "responses": OK,
                    },
                    "put": {
                        "operationId": "replaceNotes",
                        "requestBody": {
                            "required": True,
                            "content": {"application/json": {"schema": {"type": "array", "items": {"type": "string"}}}},
                        },
                        "responses": OK,
                    },
                }
            }
        )
    )
    assert "required" not in tools["addNote"].tool["function"]["parameters"]
    whole = tools["replaceNotes"]
    assert whole.tool["function"]["parameters"]["required"] == ["body"]
    assert whole.tool["function"]["parameters"]["properties"]["body"]["type"] == "array"
    assert whole.binding.body == "whole" and [(a.argument, a.name) for a in whole.binding.arguments] == [("body", "")]


def test_a_required_body_that_is_neither_json_nor_form_skips_the_operation_and_an_optional_one_is_left_out() -> None:
    upload = {"multipart/form-data": {"schema": {"type": "object", "properties": {"file": {"type": "string"}}}}}
    result = import_openapi(
        json.dumps(
            doc(
                {
                    "/upload": {
                        "post": {
                            "operationId": "upload",
                            "requestBody": {"required": True, "content": upload},
                            "responses": OK,
                        }
                    },
                    "/ping": {"post": {"operationId": "ping", "requestBody": {"content": upload}, "responses": OK}},
                }
            )
        )
    )
    assert [t.name for t in result.tools] == ["ping"] and result.tools[0].binding.body == "none"
    assert result.skipped == ("POST /upload (upload): its required request body is neither JSON nor form fields",)


def test_a_form_body_twilio_style_has_its_fields_as_arguments_sent_as_form_fields() -> None:
    """Twilio's and Stripe's documents declare only `application/x-www-form-urlencoded` bodies: their
    fields are arguments like a JSON body's, and the binding says to send them as form fields."""
    fields = {"Body": {"type": "string"}, "Author": {"type": "string"}, "MediaSid": {"type": "string"}}
    form = {"application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": fields,
                                                             "required": ["Body"]}}}  # fmt: skip
    path = {"name": "ConversationSid", "in": "path", "required": True, "schema": {"type": "string"}}
    tools = tools_of(
        doc(
            {
                "/Conversations/{ConversationSid}/Messages": {
                    "post": {
                        "operationId": "CreateConversationMessage",
                        "parameters": [path],
                        "requestBody": {"required": True, "content": form},
                        "responses": OK,
                    }
                },
                "/Blobs": {
                    "post": {
                        "operationId": "CreateBlob",
                        "requestBody": {
                            "required": True,
                            "content": {"application/x-www-form-urlencoded": {"schema": {"type": "string"}}},
                        },  # fmt: skip
                        "responses": OK,
                    }
                },
            }
        )
    )
    message = tools["CreateConversationMessage"]
    parameters = message.tool["function"]["parameters"]
    assert list(parameters["properties"]) == ["ConversationSid", "Body", "Author", "MediaSid"]
    assert parameters["required"] == ["ConversationSid", "Body"]
    assert message.binding.body == "properties" and message.binding.encoding == "form"
    assert "CreateBlob" not in tools  # a required form body without named fields has no wire form


def test_a_body_too_wide_for_the_catalog_stays_whole() -> None:
    props = {f"field{i}": {"type": "string"} for i in range(40)}
    body = {"content": {"application/json": {"schema": {"type": "object", "properties": props}}}}
    tool = tools_of(doc({"/wide": {"post": {"operationId": "wide", "requestBody": body, "responses": OK}}}))["wide"]
    assert list(tool.tool["function"]["parameters"]["properties"]) == ["body"] and tool.binding.body == "whole"
    assert len(tool.tool["function"]["parameters"]["properties"]["body"]["properties"]) == 40


def test_the_first_json_2xx_response_is_the_output_schema() -> None:
    responses = {
        "204": {"description": "nothing"},
        "202": {
            "description": "queued",
            "content": {
                "application/json": {"schema": {"type": "object", "properties": {"jobId": {"type": "string"}}}}
            },
        },
        "200": {"description": "text", "content": {"text/plain": {"schema": {"type": "string"}}}},
    }
    tool = tools_of(doc({"/jobs": {"post": {"operationId": "startJob", "responses": responses}}}))["startJob"]
    assert tool.tool["function"]["output_schema"]["properties"] == {"jobId": {"type": "string"}}


def test_nullable_looks_the_same_in_30_and_31_documents() -> None:
    def nullable_arg(version: str, schema: dict[str, Any]) -> Any:
        param = {"name": "note", "in": "query", "description": "A note.", "schema": schema}
        document = doc({"/n": {"get": {"operationId": "n", "parameters": [param], "responses": OK}}}, version=version)
        return tools_of(document)["n"].tool["function"]["parameters"]["properties"]["note"]

    old = nullable_arg("3.0.3", {"type": "string", "nullable": True, "format": "date"})
    new = nullable_arg("3.1.0", {"type": ["string", "null"], "format": "date"})
    assert (
        old
        == new
        == {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}], "description": "A note. Format: date."}
    )


def test_a_recursive_ref_is_cut_to_a_schema_that_accepts_anything() -> None:
    comment = {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "replies": {"type": "array", "items": {"$ref": "#/components/schemas/Comment"}},
        },
    }
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Comment"}}}
    document = doc(
        {"/c": {"get": {"operationId": "getComment", "responses": {"200": {"description": "ok", "content": content}}}}},
        components={"schemas": {"Comment": comment}},
    )
    output = tools_of(document)["getComment"].tool["function"]["output_schema"]
    assert output["properties"]["replies"] == {"type": "array", "items": {}}


def test_an_enum_too_long_for_the_catalog_and_a_pattern_re2_cannot_run_move_to_the_description() -> None:
    params = [
        {"name": "country", "in": "query", "schema": {"type": "string", "enum": [f"C{i:03d}" for i in range(250)]}},
        {"name": "code", "in": "query", "schema": {"type": "string", "pattern": "^(?!x)[a-z]+$"}},
    ]
    props = tools_of(doc({"/x": {"get": {"operationId": "x", "parameters": params, "responses": OK}}}))["x"].tool[
        "function"
    ]["parameters"]["properties"]
    assert "enum" not in props["country"] and "One of 250 values, e.g. C000" in props["country"]["description"]
    assert "pattern" not in props["code"] and "Pattern: ^(?!x)[a-z]+$." in props["code"]["description"]


def test_yaml_with_unquoted_response_codes_imports() -> None:
    text = """
openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /ping:
    get:
      operationId: ping
      parameters:
        - {name: day, in: query, schema: {type: string, format: date, example: 2027-03-03}}
      responses:
        200:
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {pong: {type: boolean}}}
"""
    tool = import_openapi(text).tools[0].tool["function"]
    assert tool["output_schema"]["properties"] == {"pong": {"type": "boolean"}}
    assert tool["parameters"]["properties"]["day"]["examples"] == ["2027-03-03"]  # a date stays text


def test_a_yaml_alias_bomb_is_refused_before_it_expands() -> None:
    lines = [
        "openapi: 3.0.3",
        "info: {title: t, version: '1'}",
        "paths: {}",
        "x-a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]",
    ]
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"x-{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
        previous = name
    with pytest.raises(OpenApiInvalidError) as err:
        import_openapi("\n".join(lines))
    assert "YAML aliases are not accepted" in err.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (json.dumps({"swagger": "2.0", "info": {}, "paths": {}}), "Swagger 2.0"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("[1, 2]", "must be an object"),
        (
            json.dumps(
                doc({"/a": {"get": {"operationId": "a", "responses": {"200": {"$ref": "https://evil.test/r.json"}}}}})
            ),
            "points outside",
        ),
        (
            json.dumps(
                doc(
                    {"/a": {"get": {"operationId": "a", "responses": {"200": {"$ref": "#/components/responses/Nope"}}}}}
                )
            ),
            "Nope",
        ),
        (json.dumps(doc({"/a": {"get": {"operationId": "a"}}})), "responses"),
        ("[" * 100_000 + "]" * 100_000, "not JSON or YAML"),
    ],
)
def test_hostile_or_invalid_documents_are_refused_with_a_typed_400(text: str | bytes, expected: str) -> None:
    with pytest.raises(OpenApiInvalidError) as err:
        import_openapi(text)
    error = err.value
    assert isinstance(error, PlanstackBaseError) and error.status == 400 and error.code == "openapi_invalid"
    assert expected in error.message and len(error.message) < 2000
    assert error_body(error)[1]["error"]["code"] == "openapi_invalid"


def test_the_size_is_checked_before_parsing() -> None:
    with pytest.raises(OpenApiInvalidError, match="at most 1000"):
        import_openapi(b"{" + b" " * 2000, ImportLimits(max_bytes=1000))


def test_the_operation_count_bound_refuses_the_document() -> None:
    paths = {f"/r{i}": {"get": {"operationId": f"r{i}", "responses": OK}} for i in range(6)}
    with pytest.raises(OpenApiInvalidError, match="6 operations, at most 5"):
        import_openapi(json.dumps(doc(paths)), ImportLimits(max_operations=5))


def test_operations_over_the_bound_are_refused_before_the_spec_validator() -> None:
    """Counted before validation: a document the validator would spend long on (or refuse) is refused for
    its operation count first (`responses` missing is invalid; the count is what the answer names)."""
    paths = {f"/r{i}": {"get": {"operationId": f"r{i}"}} for i in range(6)}
    with pytest.raises(OpenApiInvalidError, match="6 operations, at most 5"):
        import_openapi(json.dumps(doc(paths)), ImportLimits(max_operations=5))


def test_an_operation_past_the_argument_bound_keeps_required_then_declared_optional_arguments() -> None:
    """A search with more query parameters than the planner's catalog takes (Spotify's, YouTube's) is still a
    tool: its required arguments, then optional ones in declared order with deprecated ones last, up to the
    bound; the rest are named in `skipped`. Only more *required* arguments than the bound skip the operation."""
    params = [{"name": "q", "in": "query", "required": True, "schema": {"type": "string"}}]
    params += [{"name": "old", "in": "query", "deprecated": True, "schema": {"type": "string"}}]
    params += [{"name": f"p{i}", "in": "query", "schema": {"type": "string"}} for i in range(5)]
    wide = [{"name": f"r{i}", "in": "query", "required": True, "schema": {"type": "string"}} for i in range(5)]
    paths = {
        "/m": {"get": {"operationId": "many", "parameters": params, "responses": OK}},
        "/w": {"get": {"operationId": "wide", "parameters": wide, "responses": OK}},
    }
    imported = import_openapi(json.dumps(doc(paths)), ImportLimits(max_arguments=4))
    (tool,) = imported.tools
    parameters = tool.tool["function"]["parameters"]
    assert list(parameters["properties"]) == ["q", "p0", "p1", "p2"] and parameters["required"] == ["q"]
    assert [a.argument for a in tool.binding.arguments] == ["q", "p0", "p1", "p2"]
    assert any("(wide): 5 required arguments, at most 4" in s for s in imported.skipped)
    assert any("(many): 3 optional arguments past the bound of 4 left out: old, p3, p4" in s for s in imported.skipped)


def test_ref_expansions_and_schema_nodes_are_bounded_over_the_whole_document() -> None:
    leaf = {"$ref": "#/components/schemas/Leaf"}
    schemas: dict[str, Any] = {
        "Leaf": {"type": "string"},
        "Row": {"type": "object", "properties": {f"c{i}": leaf for i in range(10)}},
    }
    schemas["Table"] = {
        "type": "object",
        "properties": {f"r{i}": {"$ref": "#/components/schemas/Row"} for i in range(40)},
    }
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Table"}}}
    document = doc(
        {"/t": {"get": {"operationId": "table", "responses": {"200": {"description": "ok", "content": content}}}}},
        components={"schemas": schemas},
    )
    with pytest.raises(OpenApiInvalidError, match="more than 300 \\$ref expansions"):
        import_openapi(json.dumps(document), ImportLimits(max_ref_expansions=300))
    with pytest.raises(OpenApiInvalidError, match="more than 50 schema objects"):
        import_openapi(json.dumps(document), ImportLimits(max_schema_nodes=50))
    assert import_openapi(json.dumps(document)).tools[0].name == "table"


def test_a_ref_graph_that_doubles_at_every_level_is_expanded_only_as_deep_as_the_planner_reads() -> None:
    schemas: dict[str, Any] = {"L0": {"type": "string"}}
    for level in range(1, 30):  # 2^29 leaves if expanded fully
        below = {"$ref": f"#/components/schemas/L{level - 1}"}
        schemas[f"L{level}"] = {"type": "object", "properties": {"a": below, "b": below}}
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/L29"}}}
    document = doc(
        {"/big": {"get": {"operationId": "big", "responses": {"200": {"description": "ok", "content": content}}}}},
        components={"schemas": schemas},
    )
    output = import_openapi(json.dumps(document)).tools[0].tool["function"]["output_schema"]
    four = output["properties"]["a"]["properties"]["a"]["properties"]["a"]
    assert four["properties"]["b"] == {"type": "object"}  # four levels kept; deeper: the type only


def test_an_id_object_inside_a_listed_result_keeps_its_fields() -> None:
    """YouTube's search answers `items[].id.{videoId, channelId}`: the id a lookup hands on is four levels down."""
    ident = {"type": "object", "properties": {"videoId": {"type": "string"}, "channelId": {"type": "string"}}}
    item = {"type": "object", "properties": {"id": {"$ref": "#/components/schemas/ResourceId"}}}
    listing = {"type": "object", "properties": {"items": {"type": "array", "items": item}}}
    content = {"application/json": {"schema": listing}}
    document = doc(
        {
            "/search": {
                "get": {"operationId": "search", "responses": {"200": {"description": "ok", "content": content}}}
            }
        },
        components={"schemas": {"ResourceId": ident}},
    )
    output = import_openapi(json.dumps(document)).tools[0].tool["function"]["output_schema"]
    assert set(output["properties"]["items"]["items"]["properties"]["id"]["properties"]) == {"videoId", "channelId"}


def test_a_ref_chain_deeper_than_the_bound_is_refused() -> None:
    schemas: dict[str, Any] = {"R0": {"type": "string"}}
    schemas.update({f"R{i}": {"$ref": f"#/components/schemas/R{i - 1}"} for i in range(1, 40)})
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/R39"}}}
    document = doc(
        {"/deep": {"get": {"operationId": "deep", "responses": {"200": {"description": "ok", "content": content}}}}},
        components={"schemas": schemas},
    )
    with pytest.raises(OpenApiInvalidError, match="\\$ref chain deeper than 24"):
        import_openapi(json.dumps(document))
    assert import_openapi(json.dumps(document), ImportLimits(max_ref_depth=64)).tools[0].tool["function"][
        "output_schema"
    ] == {"type": "string"}


def test_a_parameter_named_and_described_as_a_credential_is_the_toolsets_not_an_argument() -> None:
    """Slack's Web API declares its token as a required header parameter of every method ("Authentication
    token. Requires scope: …") and no apiKey scheme; Google's documents a `key` query parameter ("API key.
    …"). Neither may reach a plan: the toolset's auth sends it. A `key` or `token` that is data (an object's
    key, a page token) stays an argument."""
    token = {"name": "token", "in": "header", "required": True, "schema": {"type": "string"},
             "description": "Authentication token. Requires scope: `chat:write`"}  # fmt: skip
    document = doc({
        "/chat.postMessage": {"post": {
            "operationId": "chat_postMessage", "parameters": [token], "responses": OK,
            "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {
                "type": "object", "properties": {"channel": {"type": "string"}, "text": {"type": "string"}}}}}},
        }},
        "/objects": {"get": {"operationId": "objects_get", "responses": OK, "parameters": [
            {"name": "key", "in": "query", "required": True, "schema": {"type": "string"},
             "description": "The object's key in the bucket."},
            {"name": "pageToken", "in": "query", "schema": {"type": "string"}, "description": "Page token."},
            {"name": "token", "in": "query", "schema": {"type": "string"},
             "description": "OAuth 2.0 token for the current user."},
            {"name": "api_key", "in": "query", "schema": {"type": "string"}, "description": "API key. Identifies your project."},
        ]}},
    })  # fmt: skip
    result = import_openapi(json.dumps(document))
    tools = {t.name: t for t in result.tools}
    post = tools["chat_postMessage"].tool["function"]["parameters"]
    assert list(post["properties"]) == ["channel", "text"] and "required" not in post
    assert {a.name for a in tools["chat_postMessage"].binding.arguments} == {"channel", "text"}
    assert list(tools["objects_get"].tool["function"]["parameters"]["properties"]) == ["key", "pageToken"]
    assert [s for s in result.skipped if "credential" in s] == [
        "header parameter token: a credential (named and described as one), sent by the toolset's auth",
        "query parameter api_key: a credential (named and described as one), sent by the toolset's auth",
        "query parameter token: a credential (named and described as one), sent by the toolset's auth",
    ]
