"""The follower feed's wake-up rules, on the feed alone: the watch query is a dictionary this test
writes (a stand-in for the store's one query per tick; the store-backed paths are in
test_exec_store.py and tests/reliability/test_rel_quotas.py)."""

from __future__ import annotations

import asyncio

from executors.stores.feed import EventFeed
from executors.stores.records import WatchState

TICK = 0.01


def test_the_watch_wakes_a_follower_only_for_what_it_has_not_read() -> None:
    async def go() -> None:
        states = {"r1": WatchState(last_seq=3, driven=True, status="running")}

        async def watch(run_ids: list[str]) -> dict[str, WatchState]:
            return {run_id: states[run_id] for run_id in run_ids if run_id in states}

        feed = EventFeed(watch, poll_s=TICK)
        try:
            with feed.subscribe("r1") as reader, feed.subscribe("r1") as late:
                reader.read_up_to(3)  # read the three events appended before anyone followed
                ticks = feed.ticks
                while feed.ticks < ticks + 3:
                    await asyncio.sleep(TICK)
                assert reader.wakeups == 0  # the watch's first look is no news to a follower that read it
                assert late.wakeups == 1  # one that has not read yet is told once
                states["r1"] = WatchState(last_seq=4, driven=True, status="running")  # another process wrote
                await asyncio.wait_for(reader.wait(), timeout=5)
                reader.read_up_to(4)
                feed.publish("r1", 4)  # the same event announced again (e.g. a NOTIFY): nobody wakes
                assert reader.wakeups == 1
                states["r1"] = WatchState(last_seq=4, driven=False, status="running")  # its driver died
                await asyncio.wait_for(reader.wait(), timeout=5)
                assert reader.wakeups == 2  # no new event, but the follower must look again
        finally:
            await feed.aclose()

    asyncio.run(go())


def test_an_in_process_event_wakes_only_followers_behind_it() -> None:
    async def go() -> None:
        async def watch(run_ids: list[str]) -> dict[str, WatchState]:
            return {run_id: WatchState(last_seq=0, driven=True, status="running") for run_id in run_ids}

        feed = EventFeed(watch, poll_s=60)
        try:
            with feed.subscribe("r1") as ahead, feed.subscribe("r1") as behind, feed.subscribe("r2") as other:
                ahead.read_up_to(5)  # e.g. a client that resumed with Last-Event-ID 5
                behind.read_up_to(4)
                feed.publish("r1", 5)
                assert (ahead.wakeups, behind.wakeups, other.wakeups) == (0, 1, 0)
        finally:
            await feed.aclose()

    asyncio.run(go())
