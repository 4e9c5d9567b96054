"""What a failure event does to the cluster, per trial: spares, degraded fabric, feeds, lemons.

This state depends only on the trial's event stream (not on the checkpoint policy), so it is
kept once per trial and shared by the trial's lanes. Arrays have a leading trials axis ``T``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ClusterState", "SparePool"]

# Class effects (engine codes, shared with failures_engine).
STOP_REMOVE, STOP, DEGRADE, FEED, PLANNED, LEMON = 1, 2, 3, 4, 5, 6
# What an event did.
NONE, E_STOP, E_PLANNED, E_DEGRADE, E_ABSORBED = 0, 1, 2, 3, 4
#: Outcome of a valid event by class effect (feeds are decided by ``ClusterState._feeds``).
OUTCOME = np.array([NONE, E_STOP, E_STOP, E_DEGRADE, E_ABSORBED, E_PLANNED, E_STOP], np.int64)


class SparePool:
    """Servers out of the pool and when they come back, per trial.

    Removals with the same repair delay come back in the order they left, so each delay has a
    ring buffer per trial (head/tail counters, the time of its next return); returns whose
    time depends on other parts (a rack waiting for its first feed) go to a small general list.
    All buffers live in one (buffers x trials x capacity) array, so returning the servers that
    are due costs a pass over (buffers x trials), not over every queued entry.
    """

    def __init__(self, n_trials: int, delays, units, capacity: int = 8):
        self.delays = np.asarray(delays, float)
        self.units = np.asarray(units, bool)  # every entry of that buffer returns one server
        k = self.delays.size
        self.n = n_trials
        self.time = np.full((k, n_trials, capacity), np.inf)
        self.count = np.zeros((k, n_trials, capacity), np.int64)
        self.head = np.zeros((k, n_trials), np.int64)
        self.tail = np.zeros((k, n_trials), np.int64)
        self.next_time = np.full((k, n_trials), np.inf)  # time of each buffer's head entry
        self.general_time = np.full((n_trials, 2), np.inf)
        self.general_count = np.zeros((n_trials, 2), np.int64)
        self.out = np.zeros(n_trials, np.int64)

    @property
    def capacity(self) -> int:
        return self.time.shape[2]

    def expire(self, t: np.ndarray) -> None:
        """Return every server whose repair has finished by ``t`` (T,)."""
        head, tail, next_time = self.head.ravel(), self.tail.ravel(), self.next_time.ravel()
        flat_time, flat_count = self.time.ravel(), self.count.ravel()
        capacity = self.capacity
        due = (self.next_time <= t) & (self.head < self.tail)  # t may be inf (no more events)
        slots = np.flatnonzero(due)
        while slots.size:  # each pass returns one entry per buffer; few buffers need a second
            base = slots * capacity
            position = head[slots] % capacity
            trials = slots % self.n  # a trial may come back from several buffers at once
            self.out -= np.bincount(trials, flat_count[base + position], self.n).astype(np.int64)
            head[slots] += 1
            more = head[slots] < tail[slots]
            following = np.where(more, flat_time[base + (position + 1) % capacity], np.inf)
            next_time[slots] = following
            keep = more & (following <= t[trials])
            slots = slots[keep]
        if self.general_count.any():
            due = (self.general_count > 0) & (self.general_time <= t[:, None])
            if due.any():
                self.out -= np.where(due, self.general_count, 0).sum(axis=1)
                self.general_count[due] = 0
                self.general_time[due] = np.inf

    def push(self, rows: np.ndarray, buffers: np.ndarray, when: np.ndarray, count: np.ndarray) -> None:
        """``count`` servers of trials ``rows`` come back at ``when`` through ring buffers
        ``buffers`` (one entry per trial; ``when`` nondecreasing per trial and buffer)."""
        slots = buffers * self.n + rows
        head, tail = self.head.ravel(), self.tail.ravel()
        if (tail[slots] - head[slots] >= self.capacity).any():
            self._grow()
            head, tail = self.head.ravel(), self.tail.ravel()
        empty = head[slots] == tail[slots]
        self.next_time.ravel()[slots[empty]] = when[empty]
        flat = slots * self.capacity + tail[slots] % self.capacity
        self.time.ravel()[flat] = when
        self.count.ravel()[flat] = count
        tail[slots] += 1
        self.out[rows] += count

    def push_general(self, rows: np.ndarray, when: np.ndarray, count: np.ndarray) -> None:
        free = self.general_count[rows] == 0
        if not free.any(axis=1).all():
            self.general_time = np.concatenate(
                [self.general_time, np.full_like(self.general_time, np.inf)], 1
            )
            self.general_count = np.concatenate([self.general_count, np.zeros_like(self.general_count)], 1)
            free = self.general_count[rows] == 0
        column = np.argmax(free, axis=1)
        self.general_time[rows, column] = when
        self.general_count[rows, column] = count
        self.out[rows] += count

    def ready(self, rows: np.ndarray, deficit: np.ndarray) -> np.ndarray:
        """For trials ``rows`` short of ``deficit`` servers: when enough have come back
        (inf when the outstanding repairs cannot cover it).

        Every entry returns at least one server and each ring buffer is in return order, so
        only its first ``deficit`` entries can matter. Rows whose outstanding servers all sit in
        one single-server buffer read its ``deficit``-th entry directly; a one-server shortfall
        is the earliest head of any buffer; the rest merge the first entries of every buffer.
        """
        out = np.full(rows.size, np.nan)
        if not self.general_count.any():
            self._ready_single_buffer(rows, deficit, out)
        one = (deficit == 1) & np.isnan(out)
        if one.any():
            pick = rows[one]
            earliest = self.next_time[:, pick].min(axis=0)
            if self.general_count.any():
                general = np.where(self.general_count[pick] > 0, self.general_time[pick], np.inf)
                earliest = np.minimum(earliest, general.min(axis=1))
            out[one] = earliest
        rest = np.isnan(out)
        for low, high in ((1, 4), (4, None)):  # widths grouped: few rows need many entries
            group = np.flatnonzero(rest & (deficit > low) & ((deficit <= high) if high else True))
            if group.size:
                out[group] = self._ready_within(rows[group], deficit[group], int(deficit[group].max()))
        return out

    def _ready_single_buffer(self, rows: np.ndarray, deficit: np.ndarray, out: np.ndarray) -> None:
        pending = self.tail[:, rows] - self.head[:, rows]  # (K, S)
        nonempty = pending > 0
        alone = nonempty.sum(axis=0) == 1
        capacity = self.capacity
        for c in np.flatnonzero(self.units):
            pick = np.flatnonzero(alone & nonempty[c])
            if pick.size == 0:
                continue
            r, d = rows[pick], deficit[pick]
            position = (self.head[c, r] + d - 1) % capacity
            found = self.time[c].ravel()[r * capacity + position]
            out[pick] = np.where(d <= pending[c, pick], found, np.inf)

    def _ready_within(self, rows: np.ndarray, deficit: np.ndarray, width: int) -> np.ndarray:
        capacity = self.capacity
        j = np.arange(min(capacity, width))
        head, tail = self.head[:, rows], self.tail[:, rows]  # (K, S)
        position = (head[:, :, None] + j) % capacity  # (K, S, W)
        pending = j < (tail - head)[:, :, None]
        slot = np.arange(self.delays.size)[:, None, None] * self.n + rows[None, :, None]
        flat = slot * capacity + position
        times = np.where(pending, self.time.ravel()[flat], np.inf)
        counts = np.where(pending, self.count.ravel()[flat], 0)
        times = times.transpose(1, 0, 2).reshape(rows.size, -1)
        counts = counts.transpose(1, 0, 2).reshape(rows.size, -1)
        if self.general_count.any():
            general = self.general_count[rows]
            times = np.concatenate([times, np.where(general > 0, self.general_time[rows], np.inf)], axis=1)
            counts = np.concatenate([counts, general], axis=1)
        order = np.argsort(times, axis=1, kind="stable")
        times = np.take_along_axis(times, order, axis=1)
        cumulative = np.cumsum(np.take_along_axis(counts, order, axis=1), axis=1)
        enough = cumulative >= deficit[:, None]
        first = np.argmax(enough, axis=1)
        return np.where(enough.any(axis=1), times[np.arange(rows.size), first], np.inf)

    def _grow(self) -> None:
        """Double every ring buffer, unrolling each one's entries to start at slot 0."""
        capacity = self.capacity
        position = (self.head[:, :, None] + np.arange(capacity)) % capacity
        time = np.take_along_axis(self.time, position, axis=2)
        count = np.take_along_axis(self.count, position, axis=2)
        self.time = np.concatenate([time, np.full_like(time, np.inf)], axis=2)
        self.count = np.concatenate([count, np.zeros_like(count)], axis=2)
        self.tail -= self.head
        self.head[:] = 0


class ClusterState:
    """Per-trial cluster state and the decoding of one event of every trial.

    Parameters
    ----------
    cfg : failures_engine.EngineConfig
    lemon_offset : ndarray (T,)
        Job slot of each trial's first lemon node (lemons sit every ``lemon_stride`` slots).
    """

    def __init__(self, cfg, lemon_offset: np.ndarray):
        self.cfg = cfg
        n = lemon_offset.size
        self.lemon_offset = lemon_offset
        self.lemon_count = np.zeros((n, cfg.lemon_slots), np.int32)
        self.lemon_retired = np.zeros((n, cfg.lemon_slots), bool)
        self.retired = np.zeros(n, np.int64)
        # one ring buffer per (repair delay, one server per removal or not) of the removing classes
        keys = set()
        for c in np.flatnonzero(np.isin(cfg.class_effect, (STOP_REMOVE, LEMON))):
            members = cfg.member_removes[cfg.class_offset[c] : cfg.class_offset[c] + cfg.class_count[c]]
            keys.add((float(cfg.class_repair_s[c]), bool(np.all(members == 1))))
        keys.add((float(cfg.server_repair_s), True))
        keys = sorted(keys)
        self.pool = SparePool(n, [k[0] for k in keys], [k[1] for k in keys])
        # buffer of a removal by (its delay, whether it takes one server): the single-server
        # buffer of that delay if there is one, else its multi-server buffer
        self.delay_values = np.unique([k[0] for k in keys])
        self.buffer_of = np.zeros((self.delay_values.size, 2), np.int64)
        for c, (delay, unit) in enumerate(keys):
            d = int(np.searchsorted(self.delay_values, delay))
            if unit:
                self.buffer_of[d, 1] = c
                if (delay, False) not in keys:
                    self.buffer_of[d, 0] = c
            else:
                self.buffer_of[d, 0] = c
                if (delay, True) not in keys:
                    self.buffer_of[d, 1] = c
        self.deg_until = np.full((3, n), -1.0)  # degraded-until per kind (spine, core, link), s
        self.feed_row = np.full((n, 4), -1, np.int64)
        self.feed_time = np.full((n, 4), -np.inf)

    def process(self, ev: dict) -> dict:
        """What this step's event of every trial does to the cluster.

        Parameters
        ----------
        ev : dict of (T,) arrays
            The decoded event (``failures_engine._Stream._decode``); it is extended in place.

        Returns
        -------
        dict: ``ev`` with ``out`` (NONE / E_STOP / E_PLANNED / E_DEGRADE / E_ABSORBED), ``ready``
        (when the pool again holds the job's servers) and ``spares_left``.
        """
        cfg = self.cfg
        t, cls, member, valid, effect = ev["t"], ev["cls"], ev["member"], ev["valid"], ev["effect"]
        returns = None
        if cfg.lemon_slots:
            valid = self._lemon_decode(ev, valid, member - cfg.class_offset[cls], ev["u2"])
            effect = effect * valid
            effect[ev["lemon"] & valid] = STOP_REMOVE
            returns = self._lemon_count(effect == STOP_REMOVE, ev["lemon"], cls, ev["slot"])
        out = OUTCOME[effect]
        self.pool.expire(t)
        degrade = np.flatnonzero(effect == DEGRADE)
        if degrade.size:
            slot = cfg.class_degrade_slot[cls[degrade]]
            until = t[degrade] + ev["repair"][degrade]
            self.deg_until[slot, degrade] = np.maximum(self.deg_until[slot, degrade], until)
        feed = np.flatnonzero(effect == FEED)
        if feed.size:
            self._feeds(feed, ev, member, out)
        removing = (ev["removes"] > 0) & (effect != FEED)
        if returns is not None:
            removing &= returns
        rows = np.flatnonzero(removing)
        if rows.size:
            self._push(rows, t, ev["repair"][rows], ev["removes"][rows])
        stop = out == E_STOP
        short = self.pool.out + self.retired - cfg.spare_pool
        ev["spares_left"] = -short
        ev["ready"] = t.copy()
        behind = np.flatnonzero(stop & (short > 0))
        if behind.size:
            ev["ready"][behind] = self.pool.ready(behind, short[behind])
        ev["out"] = out
        return ev

    def _push(self, rows, t, repair, removes) -> None:
        """Queue returns: single-server removals in their delay's single-server buffer, the
        rest (a leaf's servers) in its multi-server one."""
        delay = np.searchsorted(self.delay_values, repair)
        buffer = self.buffer_of[delay, (removes == 1).astype(np.int64)]
        self.pool.push(rows, buffer, t[rows] + repair, removes)

    def _lemon_decode(self, ev: dict, valid: np.ndarray, local: np.ndarray, u2: np.ndarray) -> np.ndarray:
        """Lemon-class events: drop those of retired lemons (thinning), pick the part that failed.

        Updates ``ev`` in place for the kept events; returns the new validity mask.
        """
        cfg = self.cfg
        rows = np.flatnonzero(ev["lemon"] & valid)
        if rows.size == 0:
            return valid
        j = local[rows]
        retired = self.lemon_retired[rows, j]
        valid = valid.copy()
        valid[rows[retired]] = False
        rows, j = rows[~retired], j[~retired]
        slot = (self.lemon_offset[rows] + j * cfg.lemon_stride) % cfg.job_nodes.size
        cum = cfg.lemon_kind_cum
        x = u2[rows] * cum[-1]
        which = np.minimum(np.searchsorted(cum, x, side="right"), cum.size - 1)
        below = np.where(which > 0, cum[np.maximum(which - 1, 0)], 0.0)
        frac = np.clip((x - below) / np.maximum(cum[which] - below, 1e-300), 0.0, 1.0)
        per_server = np.array([cfg.gpus_per_server, cfg.gpus_per_server, 1, cfg.nics_per_server, 1])[which]
        part = np.minimum((frac * per_server).astype(np.int64), per_server - 1)
        node = cfg.job_nodes[slot]
        for key in ("slot", "kind", "category", "component", "rack", "repair", "removes"):
            ev[key] = ev[key].copy()
        ev["slot"][rows] = slot
        ev["kind"][rows] = cfg.lemon_kind_codes[which]
        ev["category"][rows] = cfg.lemon_kind_category[which]
        ev["component"][rows] = np.where(per_server > 1, node * per_server + part, node)
        ev["rack"][rows] = cfg.node_rack[slot]
        ev["repair"][rows] = cfg.server_repair_s
        ev["removes"][rows] = 1
        return valid

    def _lemon_count(self, server_stop, lemon_event, cls, slot) -> np.ndarray:
        """Count failures of lemon nodes; a lemon's last one retires it (its server stays out)."""
        cfg = self.cfg
        returns = np.ones(slot.size, bool)
        rows = np.flatnonzero(server_stop & (cfg.class_server_hw[cls] | lemon_event))
        if rows.size == 0:
            return returns
        offset = (slot[rows] - self.lemon_offset[rows]) % cfg.job_nodes.size
        j = offset // cfg.lemon_stride
        is_lemon = (offset % cfg.lemon_stride == 0) & (j < cfg.lemon_slots)
        rows, j = rows[is_lemon], j[is_lemon]
        live = ~self.lemon_retired[rows, j]
        rows, j = rows[live], j[live]
        self.lemon_count[rows, j] += 1
        retire = self.lemon_count[rows, j] >= cfg.lemon_remove_after
        self.lemon_retired[rows[retire], j[retire]] = True
        self.retired[rows[retire]] += 1
        returns[rows[retire]] = False
        return returns

    def _feeds(self, rows, ev: dict, member, out) -> None:
        """Feed faults: a rack loses power only when every feed serving it is down.

        Updates ``out`` (stop, degrade or absorbed) and ``ev["removes"]`` in place.
        """
        cfg = self.cfg
        tr = ev["t"][rows]
        feed = cfg.member_feed[member[rows]]
        live = self.feed_time[rows] > tr[:, None]
        already = np.any(live & (self.feed_row[rows] == feed[:, None]), axis=1)
        out[rows[already]] = NONE  # a feed that is already down cannot fail again
        rows, tr, feed = rows[~already], tr[~already], feed[~already]
        if rows.size == 0:
            return
        self._record_feed_down(rows, tr, feed)
        racks = cfg.feed_racks[feed]
        single = np.any((racks >= 0) & (cfg.rack_n_feeds[np.maximum(racks, 0)] == 1), axis=1)
        if not (live.any(axis=1)[~already] | single).any():  # nothing else down: every rack keeps a feed
            out[rows] = E_ABSORBED
            return
        lost, any_down = self._racks_without_power(rows, tr, feed)
        out[rows] = np.where(any_down & (lost > 0), E_STOP, np.where(any_down, E_DEGRADE, E_ABSORBED))
        ev["removes"] = ev["removes"].copy()
        ev["removes"][rows] = lost

    def _record_feed_down(self, rows, tr, feed) -> None:
        """Note each trial's failed feed and when it is back (the table widens when full)."""
        free = ~(self.feed_time[rows] > tr[:, None])
        if not free.any(axis=1).all():
            self.feed_row = np.concatenate([self.feed_row, np.full_like(self.feed_row, -1)], axis=1)
            self.feed_time = np.concatenate([self.feed_time, np.full_like(self.feed_time, -np.inf)], axis=1)
            free = ~(self.feed_time[rows] > tr[:, None])
        column = np.argmax(free, axis=1)
        self.feed_row[rows, column] = feed
        self.feed_time[rows, column] = tr + self.cfg.feed_repair_s

    def _racks_without_power(self, rows, tr, feed) -> tuple[np.ndarray, np.ndarray]:
        """For each trial, the servers lost with the racks of ``feed`` that have no feed left
        (back when their first feed is), and whether any rack went dark; the lost servers go
        to the repair pool and the dark racks' spines and cores degrade the fabric."""
        cfg = self.cfg
        times = self.feed_time[rows]
        entries = np.where(times > tr[:, None], self.feed_row[rows], -1)  # (S, Q)
        served = np.where(entries[:, :, None] >= 0, cfg.feed_racks[np.maximum(entries, 0)], -1)  # (S, Q, K)
        lost = np.zeros(rows.size, np.int64)
        any_down = np.zeros(rows.size, bool)
        for k in range(cfg.feed_racks.shape[1]):  # the (few) racks one feed serves, not trials
            rack = cfg.feed_racks[feed, k]
            hit = np.any(served == rack[:, None, None], axis=2) & (rack[:, None] >= 0)  # (S, Q)
            down = (rack >= 0) & (hit.sum(axis=1) == cfg.rack_n_feeds[np.maximum(rack, 0)])
            if not down.any():
                continue
            back = np.min(np.where(hit, times, np.inf), axis=1)  # the first feed to come back
            any_down |= down
            sel = np.flatnonzero(down)
            lost[sel] += cfg.rack_removes[rack[sel]]
            srv = sel[cfg.rack_removes[rack[sel]] > 0]
            if srv.size:
                self.pool.push_general(rows[srv], back[srv], cfg.rack_removes[rack[srv]])
            for d in range(cfg.rack_degrades.shape[1]):
                deg = sel[cfg.rack_degrades[rack[sel], d]]
                self.deg_until[d, rows[deg]] = np.maximum(self.deg_until[d, rows[deg]], back[deg])
        return lost, any_down
