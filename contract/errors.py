"""The one root of planstack's typed errors, importable from every package (it imports nothing).

Each package keeps its own root class with its own vocabulary (`serving.errors.PlanstackError`,
`executors.errors.ExecutorError`, `planner.llm.LLMError`, `retrieval.errors.RetrievalError`), and
each of those subclasses `PlanstackBaseError`, so any layer can ask any planstack error the same two
questions: may the same call succeed later (`retryable`), and what fixes it (`hint`).
"""

from __future__ import annotations


class PlanstackBaseError(Exception):
    """A planstack error: a message, whether retrying may help, and an optional hint at the fix."""

    retryable: bool = False

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    @property
    def explained(self) -> str:
        """The message followed by the hint in parentheses, when there is one."""
        return self.message if self.hint is None else f"{self.message} ({self.hint})"
