"""How the one SQL run store reaches a database: its logic written once as programs, run by a dialect.

A *program* is a generator function that yields steps and receives each step's `Rows`:

    def renew(lease: Lease, ttl_s: float) -> Program[float]:
        rows = yield Statement("UPDATE runs SET lease_expires_at = :now + :ttl_s WHERE ... RETURNING lease_expires_at",
                               {"ttl_s": ttl_s, ...})
        return float(rows.one()[0])

A `SqlDialect` runs a program either as ONE transaction (`write`) or as plain reads (`read`): the
SQLite dialect runs the whole program on its store thread in one hop (the sync driver, `BEGIN
IMMEDIATE`), the PostgreSQL dialect awaits each step on a pooled connection. Whatever a program
raises rolls the transaction back and leaves unchanged; the driver's own errors leave as
`RunStoreError`.

The SQL text is shared by both dialects: `:name` parameters, and `:now`, the store's clock — the
Python clock passed as a parameter on SQLite (one value per program), the database server's
`clock_timestamp()` on PostgreSQL, so that replicas with skewed clocks agree on which lease is live.
What differs beyond that is typed, never an `if` on the dialect's name:

- `Statement(..., lock_rows=True)`: a SELECT whose rows stay locked until commit (`FOR UPDATE` on
  PostgreSQL; SQLite's write transaction already holds the whole database);
- `Lock(key)`: serialise writers of one key until commit (an advisory lock on PostgreSQL; nothing on
  SQLite, for the same reason);
- `Announce(run_id, seq)`: tell other processes on commit that a run's event was appended (NOTIFY on
  PostgreSQL; nothing on SQLite, whose followers in other processes see it at the feed's watch tick).

Each call site's text is bound once (`SqlDialect.bound`, cached) into the driver's positional
placeholders and a getter of the values in that order. Shared SQL has no colon outside parameters
(no `::` casts, no literals with colons).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from types import MappingProxyType
from typing import Any, NamedTuple, TypeAlias, TypeVar

from executors.stores.errors import RunStoreError
from executors.stores.feed import Listener

T = TypeVar("T")
PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
"""A `:name` parameter in shared SQL."""
EMPTY: Mapping[str, Any] = MappingProxyType({})


class Statement(NamedTuple):
    """One SQL statement in the shared text, with its parameters. `lock_rows`: a SELECT whose rows stay
    locked until the transaction ends."""

    sql: str
    params: Mapping[str, Any] = EMPTY
    lock_rows: bool = False


class Lock(NamedTuple):
    """Writers of `key` wait for each other until this transaction ends."""

    key: str | int


class Announce(NamedTuple):
    """On commit, other processes following `run_id` learn that event `seq` was appended."""

    run_id: str
    seq: int


Step: TypeAlias = Statement | Lock | Announce


class Rows(NamedTuple):
    """What a step returned: its rows (tuples, in SELECT order) and how many rows it changed."""

    rows: list[Any]
    rowcount: int = -1

    def first(self) -> Any | None:
        return self.rows[0] if self.rows else None

    def one(self) -> Any:
        """The row a RETURNING or an aggregate must give."""
        if not self.rows:
            raise RunStoreError("the run store returned no row")
        return self.rows[0]


NO_ROWS = Rows([], 0)
Program: TypeAlias = Generator[Step, Rows, T]
"""Store logic: yields steps, receives their rows, returns its result."""


def drive(program: Program[T], execute: Callable[[Step], Rows]) -> T:
    """Run `program` with a synchronous `execute` (SQLite, on its store thread)."""
    try:
        step = next(program)
        while True:
            step = program.send(execute(step))
    except StopIteration as done:
        return done.value
    finally:
        program.close()


async def drive_async(program: Program[T], execute: Callable[[Step], Awaitable[Rows]]) -> T:
    """Run `program` with an asynchronous `execute` (PostgreSQL)."""
    try:
        step = next(program)
        while True:
            step = program.send(await execute(step))
    except StopIteration as done:
        return done.value
    finally:
        program.close()


def in_list(name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """`(:name0, :name1, ...)` and its parameters, for `column IN ...` (callers keep lists short)."""
    params = {f"{name}{i}": value for i, value in enumerate(values)}
    return "(" + ", ".join(f":{key}" for key in params) + ")", params


def _getter(names: list[str]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    if not names:
        return lambda params: ()
    if len(names) == 1:
        name = names[0]
        return lambda params: (params[name],)
    return itemgetter(*names)


@dataclass(frozen=True)
class Catalog:
    """The dialect's queries for what a database already has: (table, column) rows, and index names."""

    columns: str
    indexes: str


class Bound(NamedTuple):
    """A shared statement in one dialect's SQL, and how to get its parameter values in placeholder
    order from the statement's mapping (positional binding: named binding costs a lookup per name
    and call in both drivers)."""

    sql: str
    values: Callable[[Mapping[str, Any]], tuple[Any, ...]]
    needs_now: bool
    """`:now` is a parameter (the dialect passes its clock as `now`) rather than SQL."""


class SqlDialect(ABC):
    """One database: compiles shared SQL to its own, runs programs, owns the connections."""

    display_url: str
    catalog: Catalog
    placeholder: str
    """The driver's positional placeholder."""
    now_sql: str | None = None
    """SQL for `:now` (the server's clock), or None when the clock is passed as a parameter."""

    def __init__(self) -> None:
        self._bound: tuple[dict[str, Bound], dict[str, Bound]] = ({}, {})

    def bound(self, statement: Statement) -> Bound:
        """The statement in this dialect's SQL (cached: the shared text is a constant per call site)."""
        cache = self._bound[statement.lock_rows]
        bound = cache.get(statement.sql)
        if bound is None:
            bound = cache[statement.sql] = self._bind(statement.sql, statement.lock_rows)
        return bound

    def _bind(self, sql: str, lock_rows: bool) -> Bound:
        names: list[str] = []

        def native(match: re.Match[str]) -> str:
            name = match.group(1)
            if name == "now" and self.now_sql is not None:
                return self.now_sql
            names.append(name)
            return self.placeholder

        text = PARAMETER.sub(native, self._escape(sql))
        return Bound(self._lock_rows(text) if lock_rows else text, _getter(names), "now" in names)

    def _escape(self, sql: str) -> str:
        """Shared SQL as the driver reads it (e.g. `%` doubled where `%s` is the placeholder)."""
        return sql

    def _lock_rows(self, sql: str) -> str:
        """A SELECT whose rows stay locked until commit; as it is where the transaction locks more."""
        return sql

    @abstractmethod
    async def run(self, program: Program[T], *, write: bool) -> T:
        """Run `program`: one transaction when `write`, plain reads otherwise."""

    async def read(self, program: Program[T]) -> T:
        return await self.run(program, write=False)

    async def write(self, program: Program[T]) -> T:
        return await self.run(program, write=True)

    async def reclaim(self) -> None:
        """Give space back after runs were deleted (SQLite: checkpoint the WAL); nothing by default."""
        return None

    def listener(self) -> Listener | None:
        """A push source of other processes' events (PostgreSQL LISTEN), when the database has one."""
        return None

    @abstractmethod
    async def aclose(self) -> None: ...
