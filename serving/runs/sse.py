"""A run's events as a Server-Sent Events stream: `id`/`event`/`data` per event, a failure as a final
`error` event (the OpenAI error body), then `done`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from executors.stores import RunEvent
from serving.errors import error_body


async def event_stream(events: AsyncIterator[RunEvent]) -> AsyncIterator[bytes]:
    """Each event with its sequence number as the SSE `id` (a reconnecting client sends it back as
    `Last-Event-ID`)."""
    try:
        async for event in events:
            yield f"id: {event.seq}\nevent: {event.type}\ndata: {event.model_dump_json()}\n\n".encode()
    except Exception as exc:  # noqa: BLE001 - a stream error becomes a final error event
        _, body, _ = error_body(exc)
        yield f"event: error\ndata: {json.dumps(body)}\n\n".encode()
    yield b"event: done\ndata: {}\n\n"
