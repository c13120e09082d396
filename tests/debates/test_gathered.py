"""debates.streaming.Gathered: calls of one function from a loop, gathered while earlier
trips run (the live debates' questions, replies, claims, heartbeats and frames)."""

from __future__ import annotations

import asyncio

import pytest

from debates.streaming import Gathered


def run(coroutine):
    return asyncio.run(coroutine)


class Recorder:
    """A trip function that notes each trip's items and can be held open."""

    def __init__(self) -> None:
        self.trips: list[list] = []
        self.gate = asyncio.Event()

    async def __call__(self, items: list) -> list:
        self.trips.append(list(items))
        if len(self.trips) == 1:
            await self.gate.wait()  # the first trip is still on its way...
        return [item * 10 if item >= 0 else ValueError(f"no {item}") for item in items]


def test_a_call_alone_goes_at_once_and_calls_meanwhile_go_together_in_the_next_trip():
    async def main():
        trip = Recorder()
        gathered = Gathered(trip, trips=1, in_thread=False)
        first = asyncio.ensure_future(gathered(1))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        others = [asyncio.ensure_future(gathered(n)) for n in (2, 3, 4)]  # ...while these come
        await asyncio.sleep(0)
        trip.gate.set()
        return await first, await asyncio.gather(*others), trip.trips

    first, others, trips = run(main())
    assert first == 10 and others == [20, 30, 40]
    assert trips == [[1], [2, 3, 4]]


def test_an_exception_for_one_item_is_raised_to_its_caller_only():
    async def main():
        trip = Recorder()
        trip.gate.set()
        gathered = Gathered(trip, in_thread=False)
        return await asyncio.gather(gathered(5), gathered(-1), gathered(6), return_exceptions=True)

    good, bad, other = run(main())
    assert (good, other) == (50, 60)
    assert isinstance(bad, ValueError) and str(bad) == "no -1"


def test_a_trip_that_fails_or_answers_wrongly_fails_every_caller_of_it_and_the_next_trip_runs():
    calls = {"n": 0}

    async def trip(items: list) -> list:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("Redis went away")
        if calls["n"] == 2:
            return items[:-1]  # one answer short
        return items

    async def main():
        gathered = Gathered(trip, trips=1, most=2, in_thread=False)
        return await asyncio.gather(*(gathered(n) for n in range(5)), return_exceptions=True)

    answers = run(main())
    assert [type(a) for a in answers[:2]] == [ConnectionError, ConnectionError]  # the first trip's
    assert [type(a) for a in answers[2:4]] == [RuntimeError, RuntimeError]  # "1 results for 2 calls"
    assert answers[4] == 4  # the loop went on: the last call had a trip of its own


@pytest.mark.django_db
def test_in_a_thread_the_trip_runs_off_the_loop():
    import threading

    seen = []

    def trip(items: list) -> list:
        seen.append(threading.current_thread() is threading.main_thread())
        return [item + 1 for item in items]

    async def main():
        gathered = Gathered(trip)
        return await asyncio.gather(gathered(1), gathered(2))

    assert run(main()) == [2, 3]
    assert seen and not any(seen)
