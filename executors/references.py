"""Resolve `$node` / `$node.field.sub` references in a node's arguments from upstream outputs.

A reference is a whole string value of that exact form (see `contract.plan.parse_reference`); it is
replaced by the referenced JSON value itself (a number stays a number, an object stays an object),
never by its `str()`. A path segment that is all digits indexes a list. Anything that cannot be
resolved raises `ReferenceResolutionError` naming the reference, the missing field and what was
there instead.

Fallbacks: when a node failed for good and has a `fallback`, the standby node's output stands in for
it. The scheduler passes `output_of` that already follows that rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contract.plan import parse_reference
from executors.errors import ReferenceResolutionError

OutputLookup = Callable[[str], Any]
"""node id → that node's effective output; raises KeyError when it has none."""


def resolve_args(args: dict[str, Any], output_of: OutputLookup) -> dict[str, Any]:
    """A copy of `args` with every reference replaced by the value it points to."""
    return {key: _resolve(value, output_of) for key, value in args.items()}


def _resolve(value: Any, output_of: OutputLookup) -> Any:
    parsed = parse_reference(value)
    if parsed is not None:
        return resolve_reference(parsed[0], parsed[1], output_of)
    if isinstance(value, dict):
        return {key: _resolve(item, output_of) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, output_of) for item in value]
    return value


def resolve_reference(node_id: str, path: tuple[str, ...], output_of: OutputLookup) -> Any:
    """The value at `path` in the output of `node_id`."""
    text = "$" + ".".join((node_id, *path))
    try:
        current = output_of(node_id)
    except KeyError:
        raise ReferenceResolutionError(f"{text}: node {node_id} has no output") from None
    walked = "$" + node_id
    for segment in path:
        current = _step(current, segment, text, walked)
        walked = f"{walked}.{segment}"
    return current


def _step(current: Any, segment: str, text: str, walked: str) -> Any:
    if isinstance(current, dict):
        if segment not in current:
            fields = ", ".join(sorted(current)[:12]) or "none"
            raise ReferenceResolutionError(
                f"{text}: field {segment!r} is missing in {walked}", hint=f"fields there: {fields}"
            )
        return current[segment]
    if isinstance(current, list):
        if not segment.isdigit():
            raise ReferenceResolutionError(
                f"{text}: {walked} is a list; {segment!r} is not an index", hint="use a number, e.g. .0"
            )
        index = int(segment)
        if index >= len(current):
            raise ReferenceResolutionError(f"{text}: index {index} is out of range ({walked} has {len(current)} items)")
        return current[index]
    kind = "null" if current is None else type(current).__name__
    raise ReferenceResolutionError(f"{text}: cannot take field {segment!r} of {walked}, which is {kind}")
