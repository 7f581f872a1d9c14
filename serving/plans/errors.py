"""The planner's failures as gateway errors."""

from __future__ import annotations

from serving.errors import PlanstackError


class PlanningFailedError(PlanstackError):
    status = 422
    type = "invalid_request_error"
    code = "planning_failed"
