"""The failure events of every trial: times, classes and members, drawn and decoded in batches.

Each block has its own generator (``SeedSequence(seed).spawn(n)[block]``) and always draws
whole batches of ``BATCH_EVENTS`` x ``BLOCK_TRIALS`` numbers, so a block's stream is the same
however many other blocks run with it and however many steps they need.
"""

from __future__ import annotations

from collections.abc import Callable
from math import gamma

import numpy as np

from scenarios.sim.failures.cluster import LEMON, STOP_REMOVE

__all__ = ["BATCH_EVENTS", "BLOCK_TRIALS", "EventStream"]

#: Events drawn per trial at a time (a fixed batch keeps every block's random stream the same
#: however many steps other blocks need).
BATCH_EVENTS = 128
#: Blocks drawn (and decoded) between two calls of ``EventStream.on_draw``.
DRAW_SLICE_BLOCKS = 16
#: Trials per block (the unit of seeding, chunking and merging).
BLOCK_TRIALS = 500


class EventStream:
    """Every trial's failure events, drawn block by block in fixed batches and decoded.

    Per block and batch: ``BATCH_EVENTS`` x ``BLOCK_TRIALS`` gaps (standard exponential, or
    Weibull of ``cfg.weibull_shape``), then as many uniforms choosing class and member, then
    (only with lemon nodes) as many for the lemon's failed part. A trial's stream therefore
    depends only on its block's generator and its column, whatever else is simulated with it.
    """

    def __init__(self, cfg, generators, block_trials, injected, columns=None):
        self.cfg = cfg
        self.generators = generators
        self.block_trials = block_trials
        self.injected = injected
        self.columns = columns
        self.cum = np.cumsum(cfg.class_rate * cfg.class_count)
        self.total = float(self.cum[-1]) if self.cum.size else 0.0
        shape = cfg.weibull_shape
        if self.total > 0:
            self.scale = 1.0 / self.total if shape == 1.0 else 1.0 / (self.total * gamma(1.0 + 1.0 / shape))
        self.t_last = np.zeros(sum(block_trials) if columns is None else len(columns))
        self.position = 0
        self.batch = None
        #: Called (no arguments) between the slices of a batch's draw: the engine's progress
        #: callback, so a cancel stops a draw of many trials within a slice.
        self.on_draw: Callable[[], None] | None = None
        if injected is not None:
            self.batch = injected
            self.position = 0

    def lemon_offsets(self) -> np.ndarray:
        n = max(int(self.cfg.job_nodes.size), 1)
        if self.generators is None:
            return np.zeros(sum(self.block_trials), np.int64)
        parts = [gen.integers(0, n, size=BLOCK_TRIALS) for gen in self.generators]
        offsets = np.concatenate([p[:count] for p, count in zip(parts, self.block_trials, strict=True)])
        return offsets if self.columns is None else offsets[self.columns]

    def next(self) -> dict:
        """The next event of every trial, decoded: a dict of (T,) arrays (see ``_decode``)."""
        if self.injected is not None:
            if self.batch is None or not isinstance(self.batch, dict):
                times, classes, members = self.injected
                self.batch = self._decode(times, classes, members, np.full(times.shape, 0.5))
                n = times.shape[1]
                self.end = self._decode(
                    np.full((1, n), np.inf), np.full((1, n), -1), np.zeros((1, n), np.int64), np.zeros((1, n))
                )
                self.position = 0
            k = self.position
            self.position += 1
            source, row = (self.batch, k) if k < self.batch["t"].shape[0] else (self.end, 0)
            return {key: value[row] for key, value in source.items()}
        if self.batch is None or self.position >= BATCH_EVENTS:
            self._draw()
        k = self.position
        self.position += 1
        if len(self.batch) == 1:
            return {key: value[k] for key, value in self.batch[0].items()}
        return {key: np.concatenate([part[key][k] for part in self.batch]) for key in self.batch[0]}

    def _draw(self) -> None:
        gaps, u1, u2 = [], [], []
        for i, (gen, count) in enumerate(zip(self.generators, self.block_trials, strict=True)):
            if i % DRAW_SLICE_BLOCKS == DRAW_SLICE_BLOCKS - 1:
                self._drawn()
            shape = (BATCH_EVENTS, BLOCK_TRIALS)
            if self.cfg.weibull_shape == 1.0:
                gap = gen.standard_exponential(shape)
            else:
                gap = gen.weibull(self.cfg.weibull_shape, shape)
            gaps.append(gap[:, :count])
            u1.append(gen.random(shape)[:, :count])
            if self.cfg.lemon_slots:  # the only use of a second uniform per event
                u2.append(gen.random(shape)[:, :count])
        self._drawn()
        gaps = np.concatenate(gaps, axis=1)
        self._drawn()
        u1 = np.concatenate(u1, axis=1)
        u2 = np.concatenate(u2, axis=1) if u2 else np.zeros_like(u1)
        self._drawn()
        if self.columns is not None:
            gaps, u1, u2 = gaps[:, self.columns], u1[:, self.columns], u2[:, self.columns]
            self._drawn()
        times = self._event_times(gaps)
        self.t_last = times[-1]
        self._drawn()
        self.batch = self._decoded_slices(times, u1, u2)
        self.position = 0

    def _drawn(self) -> None:
        if self.on_draw is not None:
            self.on_draw()

    def _event_times(self, gaps: np.ndarray) -> np.ndarray:
        """Absolute event times of the batch: each trial's cumulative gaps after its last event,
        in slices of trials with ``on_draw`` between them (a cumsum over 100k trials took about
        a second, which a cancel had to wait for). Column by column, so the same times."""
        if self.total <= 0:
            return np.full((BATCH_EVENTS, self.t_last.size), np.inf)
        times = np.empty_like(gaps)
        width = DRAW_SLICE_BLOCKS * BLOCK_TRIALS
        for start in range(0, gaps.shape[1], width):  # slices of thousands of trials
            cut = slice(start, start + width)
            times[:, cut] = self.t_last[cut] + np.cumsum(gaps[:, cut] * self.scale, axis=0)
            self._drawn()
        return times

    def _decoded_slices(self, times, u1, u2) -> list[dict]:
        """The batch decoded in slices of trials (columns; the decoding is element-wise, so the
        same events), with ``on_draw`` called between slices; ``next`` joins one row of each."""
        width = DRAW_SLICE_BLOCKS * BLOCK_TRIALS
        parts = []
        for start in range(0, times.shape[1], width):  # slices of thousands of trials
            cut = slice(start, start + width)
            parts.append(self._decode(times[:, cut], *self._choose(u1[:, cut]), u2[:, cut]))
            self._drawn()
        return parts

    def _choose(self, u1: np.ndarray):
        """Class (by cumulative rate) and member (uniform within it) of uniforms ``u1``."""
        cfg = self.cfg
        x = u1 * self.total
        cls = np.minimum(np.searchsorted(self.cum, x, side="right"), self.cum.size - 1)
        below = np.where(cls > 0, self.cum[np.maximum(cls - 1, 0)], 0.0)
        width = cfg.class_rate[cls] * cfg.class_count[cls]
        frac = np.clip((x - below) / width, 0.0, 1.0)
        local = np.minimum((frac * cfg.class_count[cls]).astype(np.int64), cfg.class_count[cls] - 1)
        return cls, cfg.class_offset[cls] + local

    def _decode(self, t, cls, member, u2) -> dict:
        """What each drawn event is, for a whole batch at once (arrays of one shape).

        ``valid`` (a real event), ``cls``, ``member``, ``effect`` (class effect, 0 when not
        valid), ``kind``, ``category``, ``component``, ``rack``, ``slot`` (job slot), ``removes``
        (servers lost), ``repair`` (s until the part returns), ``lemon``, ``u2``.
        """
        cfg = self.cfg
        valid = (cls >= 0) & (t < np.inf)
        cls = np.maximum(cls, 0)
        effect = cfg.class_effect[cls] * valid
        out = {
            "t": t,
            "valid": valid,
            "cls": cls,
            "member": member,
            "effect": effect,
            "category": cfg.class_category[cls],
            "rack": cfg.member_rack[member],
            "removes": cfg.member_removes[member] * (effect == STOP_REMOVE),
            "repair": cfg.class_repair_s[cls],
        }
        if cfg.lemon_slots:  # a lemon event names its part only once decoded (the log reads these)
            out |= {
                "kind": cfg.class_kind[cls],
                "component": cfg.member_component[member],
                "slot": cfg.member_slot[member],
                "lemon": effect == LEMON,
                "u2": u2,
            }
        return out
