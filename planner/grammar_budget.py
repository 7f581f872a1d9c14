"""The planner's grammars sized at its own budgets: how long an answer can get, and its `max_tokens`.

The measuring itself is planner/sizing.py (shared with the gateway's tool-call decoder); this module
supplies what `GrammarConfig` allows for the parts a planner grammar leaves unbounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner import sizing
from planner.config import GrammarConfig
from planner.sizing import Budget


def grammar_budget(config: GrammarConfig) -> Budget:
    """What the planner allows for the parts of its grammars left unbounded (planner/sizing.py)."""
    return Budget(
        free_string=config.free_string_tokens,
        number_digits=config.number_max_digits,
        array_items=config.max_array_items,
    )


def max_tokens_for(schema: Mapping[str, Any], config: GrammarConfig, cap: int) -> int:
    """`max_tokens` that never cuts the grammar's output within its budgets; the cap wins above."""
    return sizing.max_tokens_for(schema, grammar_budget(config), cap)


def worst_case_chars(schema: Mapping[str, Any], config: GrammarConfig) -> int:
    """Longest JSON text the schema admits (outlines_core's regex), unbounded parts at their budget."""
    return sizing.worst_case_chars(schema, grammar_budget(config))
