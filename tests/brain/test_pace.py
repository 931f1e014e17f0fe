"""brain-sync paced under Box's per-user rate limit: the pacer's rate, a sync with zero 429s under
the emulator's budget, and a 429 answered anyway waited out per Retry-After."""

from __future__ import annotations

import itertools
import threading
import time

import anyio

from box_memory.brain.pace import DEFAULT_CALLS_PER_MINUTE, CallPacer, duration
from box_memory.brain.sync import SyncOptions
from tests.brain.helpers import lib_sync, put


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds


def _most_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(sum(1 for u in times[i:] if u < t + window) for i, t in enumerate(times))


def test_the_default_pace_is_just_under_boxs_published_figure() -> None:
    assert 900 <= DEFAULT_CALLS_PER_MINUTE < 1000


def test_the_pacer_never_exceeds_its_rate_on_a_deterministic_clock() -> None:
    clock = FakeClock()
    pacer = CallPacer(120, clock=clock, sleep=clock.sleep)  # one slot every 0.5 s
    granted = []
    for n in range(300):
        if n % 7 == 0:
            clock.sleep(0.3)  # callers come and go at their own pace
        pacer.acquire()
        granted.append(clock())
    assert all(b - a >= 0.5 - 1e-9 for a, b in itertools.pairwise(granted))
    assert _most_in_window(granted, 60.0) <= 121
    assert pacer.granted == 300
    assert pacer.estimate_s(240) == 120.0


def test_a_batch_takes_its_slots_at_once_and_the_next_batch_waits_for_them() -> None:
    clock = FakeClock()
    pacer = CallPacer(120, clock=clock, sleep=clock.sleep)  # one slot every 0.5 s
    starts, calls = [], []
    for _ in range(100):
        pacer.acquire(8)
        starts.append(clock())
        calls += [clock()] * 8  # the batch's calls go at once
        clock.sleep(1.5)  # the batch's work: overlaps the wait for the next batch's slots
    assert all(b - a >= 8 * 0.5 - 1e-9 for a, b in itertools.pairwise(starts))
    assert starts[-1] - starts[0] <= 99 * 8 * 0.5 + 1e-9  # the work's time was not added
    assert _most_in_window(calls, 60.0) <= 120 + 8
    assert pacer.granted == 800


def test_a_hold_stops_every_caller_until_it_ends() -> None:
    clock = FakeClock()
    pacer = CallPacer(600, clock=clock, sleep=clock.sleep)
    pacer.acquire()
    start = clock()
    pacer.hold(5)
    pacer.acquire()
    assert clock() >= start + 5 + 0.1  # the waiting retry goes at +5, the next slot after it
    assert pacer.held_s == 5


def test_threads_share_one_pace() -> None:
    pacer = CallPacer(1200)  # 50 ms apart, real clock
    granted: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(5):
            pacer.acquire()
            with lock:
                granted.append(time.monotonic())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    granted.sort()
    assert len(granted) == 20
    assert granted[-1] - granted[0] >= 19 * 0.05 - 0.01
    assert _most_in_window(granted, 0.5) <= 11 + 1  # 0.5 s holds 10 slots, +1 for a late waker


def test_plan_durations_read_well() -> None:
    assert duration(12.4) == "about 12 s"
    assert duration(631) == "about 10 min 31 s"
    assert duration(7300) == "about 2 h 1 min"


def test_a_paced_sync_under_the_emulators_budget_sees_no_429(emu, box):
    # 20 calls per 6 s window is Box's budget scaled down; the sync paces at 90% of it.
    emu.configure(rate_limit=True, calls_per_minute=20, rate_window_s=6)
    for n in range(14):
        put(box, f"f{n}.txt", f"file {n}\n")
    notices: list[str] = []
    run = lib_sync("0", opts=SyncOptions(calls_per_minute=180, notice=notices.append))
    assert run.status == "completed", run.error
    assert run.counts["indexed"] == 14
    assert emu.counters.get("rate_limited", 0) == 0
    assert run.pace is not None and run.pace["planned_calls"] == 14
    assert run.pace["estimated_s"] == round(14 * 60 / 180, 1)
    assert any("fetching 14 new or changed files" in line and "about 5 s" in line for line in notices)
    assert run.to_dict()["pace"]["calls_per_minute"] == 180


def test_the_same_sync_unpaced_bursts_into_429s(emu, box):
    emu.configure(rate_limit=True, calls_per_minute=20, rate_window_s=6)
    for n in range(30):
        put(box, f"f{n}.txt", f"file {n}\n")
    lib_sync("0", opts=SyncOptions(calls_per_minute=0, client_kwargs={"max_retries": 1}))
    assert emu.counters.get("rate_limited", 0) > 0


def test_a_429_answered_anyway_is_waited_out_per_retry_after(emu, box):
    # The pacer is set faster than the budget, as if another client of the user spent it.
    emu.configure(rate_limit=True, calls_per_minute=3, rate_window_s=2)
    for n in range(5):
        put(box, f"f{n}.txt", f"file {n}\n")
    waits: list[float] = []

    async def real_sleep(seconds: float) -> None:
        waits.append(seconds)
        await anyio.sleep(seconds)

    opts = SyncOptions(calls_per_minute=6000, concurrency=1, client_kwargs={"sleep": real_sleep})
    run = lib_sync("0", opts=opts)
    assert run.status == "completed", run.error
    calls = emu.calls
    refused = [i for i, c in enumerate(calls) if c.outcome == "rate_limited"]
    assert refused and waits
    assert all(w >= 1 and w == int(w) for w in waits)  # Retry-After's whole seconds, not jitter
    for i in refused:  # the retry after the wait is admitted: the wait was long enough
        retry = calls[i + 1]
        assert retry.arguments == calls[i].arguments and retry.outcome == "ok"
        assert retry.time - calls[i].time >= 1 - 0.05
    assert run.pace is not None and run.pace["held_s"] == sum(waits)
