"""Tool calling done by the gateway: tools checked at the door, every grammar through the schema guard."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner.catalog import CatalogError, ToolCatalog
from serving.door import Door
from serving.errors import InvalidRequestError, SchemaTooComplexError
from serving.protocol import ChatMessage
from serving.schema_guard import SchemaGuard
from serving.settings import ToolCallSettings
from serving.toolcalls.choice import call_policy, invalid_tools
from serving.toolcalls.decoder import DecodedTurn, EngineCall, PreparedTools, ToolCallDecoder
from serving.toolcalls.prompts import Message, ToolPrompts
from serving.toolcalls.schemas import ArgumentGrammar, JsonSchema, selection_schema
from serving.toolcalls.validation import UnsafeSchemaError, argument_validator


class ToolCallService:
    def __init__(
        self,
        settings: ToolCallSettings,
        guard: SchemaGuard,
        prompts: ToolPrompts | None = None,
        *,
        door: Door | None = None,
    ) -> None:
        self.settings = settings
        self._guard = guard
        self._door = door
        self.prompts = prompts or ToolPrompts()
        self.grammar = ArgumentGrammar(settings)

    async def prepare(
        self, tools: Any, tool_choice: str | dict[str, Any] | None, parallel: bool | None, *, tenant: str = ""
    ) -> PreparedTools:
        """Check the client's tools (at the door: bounded, off the loop, once per content and tenant) and
        build (and guard-check, on the tenant's share) every schema this turn may send."""
        if self._door is not None and tools is not None:
            try:
                tools = await self._door.catalog(tools, tenant=tenant)
            except CatalogError as exc:
                raise invalid_tools(exc) from exc
        policy = call_policy(tools, tool_choice, parallel, self.settings)
        position = {name: index for index, name in enumerate(policy.catalog.names())}
        schemas: dict[str, JsonSchema] = {}
        validators = {}
        for name in policy.offered:
            param = f"tools[{position[name]}].function.parameters"
            parameters = dict(policy.catalog.get(name).parameters)
            try:
                validators[name] = argument_validator(parameters, checked=True)  # the catalog checked it
            except UnsafeSchemaError as exc:
                raise InvalidRequestError(str(exc), param=param, code="invalid_tools") from exc
            schemas[name] = self.grammar.arguments_schema(parameters)
            await self._check(schemas[name], param, tenant)
        selection = None
        if policy.named is None:
            selection = selection_schema(policy.offered, min_calls=policy.min_calls, max_calls=policy.max_calls)
            await self._check(selection, "tools", tenant)
        return PreparedTools(policy, schemas, validators, selection)

    async def _check(self, schema: JsonSchema, param: str, tenant: str) -> None:
        try:
            await self._guard.check(schema, tenant=tenant)
        except SchemaTooComplexError as exc:
            raise SchemaTooComplexError(f"a tool schema is too complex: {exc.message}", param=param) from exc
        except InvalidRequestError as exc:
            raise InvalidRequestError(exc.message, param=param, code=exc.code) from exc

    def conversation(self, messages: Sequence[ChatMessage], catalog: ToolCatalog | None) -> list[Message]:
        return self.prompts.conversation(messages, catalog)

    async def decode(
        self, conversation: list[Message], tools: PreparedTools, sampling: dict[str, Any], engine: EngineCall
    ) -> DecodedTurn:
        decoder = ToolCallDecoder(self.grammar, self.prompts, engine, self.settings.retries)
        return await decoder.decode(conversation, tools, sampling)
