"""Throttling of live messages (<= 10 per second per run, newest value kept)."""

from __future__ import annotations

from scenarios.broadcast import MAX_MESSAGES_PER_S, Throttle, design_group, run_group


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeTimers:
    """Timers that fire only when the test advances the clock past their due time."""

    def __init__(self, clock):
        self.clock = clock
        self.due: list[tuple[float, object, tuple]] = []

    def __call__(self, wait_s, function, args=()):
        timers = self

        class Timer:
            daemon = False

            def start(self):
                timers.due.append((timers.clock.now + wait_s, function, args))

            def cancel(self):
                timers.due = [d for d in timers.due if d[1:] != (function, args)]

        return Timer()

    def advance(self, to_s):
        while True:
            ready = sorted((d for d in self.due if d[0] <= to_s), key=lambda d: d[0])
            if not ready:
                break
            when, function, args = ready[0]
            self.due.remove(ready[0])
            self.clock.now = when
            function(*args)
        self.clock.now = to_s


def make_throttle():
    clock = FakeClock()
    timers = FakeTimers(clock)
    sent = []
    throttle = Throttle(
        sender=lambda group, message: sent.append((clock.now, message)), clock=clock, timer=timers
    )
    return throttle, timers, clock, sent


def test_throttle_sends_at_most_ten_messages_per_second_per_run():
    throttle, timers, _clock, sent = make_throttle()
    for i in range(1000):  # 1000 progress updates over 2 s
        timers.advance(i * 0.002)
        throttle.publish(1, "progress", "run-1", {"type": "progress", "progress": i / 999})
    timers.advance(3.0)
    times = [t for t, _ in sent]
    for start in times:
        assert sum(start <= t < start + 1.0 for t in times) <= MAX_MESSAGES_PER_S
    assert len(sent) >= 15  # and it does not starve either


def test_throttle_delivers_the_newest_value_last():
    throttle, timers, _clock, sent = make_throttle()
    for i in range(50):
        throttle.publish(1, "progress", "run-1", {"progress": i})
    timers.advance(1.0)
    assert sent[0][1] == {"progress": 0}
    assert sent[-1][1] == {"progress": 49}
    assert len(sent) == 2


def test_throttle_keeps_one_pending_message_per_kind():
    throttle, timers, _clock, sent = make_throttle()
    throttle.publish(1, "progress", "g", {"type": "progress", "v": 1})
    throttle.publish(1, "progress", "g", {"type": "progress", "v": 2})
    throttle.publish(1, ("partial", "link_util"), "g", {"type": "partial", "v": 3})
    timers.advance(1.0)
    assert [m["v"] for _, m in sent] == [1, 2, 3]


def test_throttle_forced_message_flushes_pending_first():
    throttle, timers, _clock, sent = make_throttle()
    throttle.publish(1, "progress", "g", {"v": 1})
    throttle.publish(1, "progress", "g", {"v": 2})
    throttle.publish(1, "status", "g", {"v": 3}, force=True)
    assert [m["v"] for _, m in sent] == [1, 2, 3]
    timers.advance(1.0)
    assert len(sent) == 3


def test_throttle_is_per_run():
    throttle, _timers, _clock, sent = make_throttle()
    throttle.publish(1, "progress", "a", {"run": 1})
    throttle.publish(2, "progress", "b", {"run": 2})
    assert len(sent) == 2


def test_group_names_derive_from_ids():
    assert run_group(12) == "run-12"
    assert design_group("7") == "design-7"
