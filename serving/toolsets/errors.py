"""What registering or naming a toolset can answer besides success (each class declares its status and code)."""

from __future__ import annotations

from serving.errors import InvalidRequestError, NotFoundError, PlanstackError


class ToolsetNotFound(NotFoundError):
    """No toolset of that id or name for this tenant (another tenant's toolsets do not exist for it)."""

    code = "toolset_not_found"
    param = "toolsets"


class ToolsetInvalid(InvalidRequestError):
    """The registration cannot be used as given (fields, auth scheme, tools the planner cannot take)."""

    code = "invalid_toolset"


class InvalidClientTools(InvalidRequestError):
    """The caller's own `tools` of a run cannot be used as given."""

    code = "invalid_tools"
    param = "tools"


class ToolNameClash(InvalidRequestError):
    """Two tools of one run's catalog have the same name."""

    code = "tool_name_clash"
    param = "toolsets"


class ToolsetUnreachable(PlanstackError):
    """The toolset's server could not be reached or listed at registration or refresh (nothing was saved)."""

    status = 502
    type = "upstream_error"
    code = "toolset_unreachable"
    retryable = True
    retry_after_s = 5
