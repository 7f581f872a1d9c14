"""How one tool call becomes one HTTP request: the binding an OpenAPI operation is imported into.

The importer (`serving.toolsets.openapi_import`) turns each operation of an OpenAPI document into a
tool (OpenAI format: name, description, JSON-Schema parameters, output schema) and an `HttpBinding`
that says where each argument goes on the wire; the HTTP caller (`executors.sources`) builds the
request from the binding and the call's arguments. The binding is stored with the toolset's tool
definitions, so a run resumed on another replica calls exactly what it planned with.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

HttpMethod = Literal["GET", "PUT", "POST", "PATCH", "DELETE", "HEAD"]
IDEMPOTENT_METHODS: frozenset[str] = frozenset({"GET", "PUT", "DELETE", "HEAD"})


class ArgumentBinding(BaseModel):
    """One tool argument and where it goes: a path template variable, a query key, a header, or a
    property of the body (`name` is the name on the wire; with `body: whole` the one `body` argument
    has `name` "" and is the whole JSON body)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argument: str = Field(min_length=1, max_length=64)
    location: Literal["path", "query", "header", "body"]
    name: str = Field(max_length=256)


class HttpBinding(BaseModel):
    """The HTTP side of one imported operation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: HttpMethod
    path: str = Field(min_length=1, max_length=2048, description="Path template under the base URL, {name} variables.")
    arguments: tuple[ArgumentBinding, ...] = ()
    body: Literal["none", "properties", "whole"] = Field(
        default="none",
        description="No body; a JSON object built from the `body` arguments; or one argument that is the body.",
    )
    encoding: Literal["json", "form"] = Field(
        default="json",
        description="How a body of `properties` is sent: a JSON object, or `application/x-www-form-urlencoded` "
        "fields (Twilio's and Stripe's documents declare only that; a list repeats its key).",
    )
    operation_id: str | None = Field(
        default=None, max_length=256, description="The operationId as the document wrote it."
    )

    @property
    def idempotent(self) -> bool:
        """GET/PUT/DELETE/HEAD may be retried as they are; POST/PATCH only with an Idempotency-Key."""
        return self.method in IDEMPOTENT_METHODS
