"""OpenAPI documentation of the routes' request bodies and error answers, from the models they use.

The routes read their JSON bodies themselves (a hard size cap while streaming the body in, which a
FastAPI body parameter would not apply), so FastAPI cannot see those models: `json_body(Model)`
gives the route decorator the model's JSON schema as the documented request body (`openapi_extra`)
and the error answers with the `ErrorResponse` model. Parsing still goes through `parse_model`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from serving.protocol import ErrorResponse

ERRORS: dict[int, str] = {
    400: "Invalid request (`error.param` names the field)",
    401: "Missing or unknown API key",
    404: "Unknown model or resource",
    413: "Request body over `gateway.max_body_bytes`",
    429: "Too many requests in flight (`Retry-After`)",
    500: "Internal error (no details)",
    503: "Engine or store unavailable (`Retry-After`)",
    504: "The engine did not answer in time",
}


def error_responses(*statuses: int, extra: dict[int, str] | None = None) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: the listed statuses (all when none are given), each an ErrorResponse."""
    chosen = {status: ERRORS[status] for status in statuses or ERRORS}
    chosen.update(extra or {})
    return {status: {"model": ErrorResponse, "description": text} for status, text in sorted(chosen.items())}


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with its `$defs` inlined (an operation's schema cannot carry its own)."""
    schema = model.model_json_schema(by_alias=True)
    defs = schema.pop("$defs", {})

    def resolve(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [resolve(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 16:
            target = defs.get(ref.rsplit("/", 1)[-1], {})
            return resolve({**target, **{k: v for k, v in node.items() if k != "$ref"}}, depth + 1)
        return {key: resolve(value, depth) for key, value in node.items()}

    resolved: dict[str, Any] = resolve(schema, 0)
    return resolved


def json_body(model: type[BaseModel], *, extra_errors: dict[int, str] | None = None) -> dict[str, Any]:
    """Route decorator arguments documenting a JSON request body of `model` and the error answers."""
    body = {
        "required": True,
        "content": {"application/json": {"schema": inline_schema(model)}},
        "description": (model.__doc__ or model.__name__).strip().splitlines()[0],
    }
    return {"openapi_extra": {"requestBody": body}, "responses": error_responses(extra=extra_errors)}
