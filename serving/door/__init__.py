"""Checks at the door: every client structure bounded before any work, the expensive checks off the
event loop in a fair, deadline-bound worker pool, verdicts on catalogs reused (serving/door/checks.py)."""

from serving.door.checks import Door
from serving.door.pool import CheckTimeoutError, CheckUnavailableError, DoorPool

__all__ = ["CheckTimeoutError", "CheckUnavailableError", "Door", "DoorPool"]
