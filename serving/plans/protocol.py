"""Request bodies of the plan endpoints, and the name of the virtual chat model that answers with a plan."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from serving.protocol import MAX_TOOLS, at_most

PLANNER_MODEL = "planner"


class PlanCreate(BaseModel):
    """POST /v1/plans."""

    model_config = ConfigDict(extra="forbid")

    request: str = Field(min_length=1, max_length=4000, description="What the user wants, in natural language.")
    tools: Annotated[list[dict[str, JsonValue]] | None, at_most(MAX_TOOLS)] = Field(
        None, max_length=MAX_TOOLS, description="Plan over exactly these tools (OpenAI `tools` format)."
    )
    toolsets: list[Annotated[str, Field(min_length=1, max_length=48)]] | None = Field(
        None, max_length=64, description="Plan over these toolsets too (names or ids; `builtin`, `llm`, `ask_user`)."
    )
