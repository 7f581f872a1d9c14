"""The executors' `StepModel` as the gateway provides it: the served model for `llm_generate` / `llm_extract`.

Every step is a request of the run's tenant like any other: its schema (llm_extract) passes the
schema guard first (static limits, compile check, the engine's grammar-memory budget), it is salted
with the tenant's cache salt (server-side, from the isolation scope), and it takes one of the
tenant's engine slots, waiting at most `tools.llm.slot_wait_s` for one (no client waits on a step;
past the wait the step fails as unavailable and is retried like any unavailable tool).
"""

from __future__ import annotations

from typing import Any

from contract.errors import PlanstackBaseError
from executors.errors import ToolArgumentError, ToolExecutionError, ToolUnavailable
from planner.llm import PlannerLLM
from serving.backpressure import UpstreamSlots
from serving.isolation import CacheSalter
from serving.schema_guard import SchemaGuard
from serving.toolsets.config import LlmStepsConfig


class EngineStepModel:
    def __init__(
        self,
        llm: PlannerLLM,
        salter: CacheSalter,
        slots: UpstreamSlots,
        guard: SchemaGuard,
        config: LlmStepsConfig,
    ) -> None:
        self._llm = llm
        self._salter = salter
        self._slots = slots
        self._guard = guard
        self._config = config

    async def complete(
        self, messages: list[dict[str, str]], *, max_tokens: int, schema: dict[str, Any] | None, tenant: str
    ) -> str:
        """The model's text, or a typed tool error: a schema the guard refuses is the plan's fault (not
        retried); a busy, unreachable or slow engine is worth another attempt."""
        if schema is not None:
            try:
                await self._guard.check(schema, tenant=tenant)
            except PlanstackBaseError as exc:
                if exc.status == 400:
                    raise ToolArgumentError(f"llm_extract: the schema is refused: {exc.message}") from None
                raise ToolUnavailable(f"the schema check could not run now ({exc.status})") from None
        try:
            async with self._slots.admitted(tenant, wait_s=self._config.slot_wait_s):
                completion = await self._llm.complete(
                    messages, json_schema=schema, max_tokens=max_tokens, cache_salt=self._salter.salt(tenant)
                )
        except PlanstackBaseError as exc:
            if exc.retryable:
                raise ToolUnavailable(f"the model could not answer the step now ({exc.status})") from None
            raise ToolExecutionError(f"the model refused the step ({exc.status})") from None
        return completion.text
