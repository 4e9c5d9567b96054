"""Per-GPU power series of a training job: phase timeline x job events -> W per GPU per sample.

A *row* is the set of GPUs that follow the same phases at the same times: one pipeline stage,
or one stage of one stagger group. Its phases repeat with a period (the step time, longer when
staggered or capped). Everything here is array-in/array-out over rows x samples:

1. :func:`rows_from_stages`, :func:`capped_rows`, :func:`staggered_rows` build the row
   timelines (what a cap or a stagger does to the schedule).
2. :func:`job_states` turns an event log into per-sample fractions of training / stalled /
   down time, a ramp factor and the job clock (which stops while the job stalls or is down).
3. :func:`gpu_targets_w` is the exact bin average of each row's piecewise-constant phase power
   over every sample, from the cumulative energy function of the repeating phases.
4. :func:`first_order` is the GPU's first-order response to that target, exact for a target
   constant within each sample (zero-order hold), as a bin average again.

Then :func:`moving_average` (the grid side of ramp-limited storage), :func:`band_share`
(spectrum) and :func:`series_figures` (peak, trough, swing, ramp).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import maximum_filter1d, minimum_filter1d

from scenarios.sim.format.power import CAP_EXPONENT, EVENT_CODES, JobEvents
from scenarios.sim.step.pipeline import PHASE_CODES, PHASE_KINDS

__all__ = [
    "JobStates",
    "RowTimeline",
    "band_share",
    "band_shares",
    "block_mean",
    "capped_rows",
    "first_order",
    "gpu_targets_w",
    "job_states",
    "longest_low_run_s",
    "minute_swing_mw",
    "moving_average",
    "row_energy_j",
    "rows_from_stages",
    "series_figures",
    "staggered_rows",
]

_WAIT = PHASE_CODES["straggler"]
#: Kinds whose length follows the compute speed under a cap: compute itself, and the waits
#: that are other stages' compute (pipeline fill/drain, straggler spread).
_COMPUTE_KINDS = np.array([PHASE_CODES[k] for k in ("forward", "backward", "optimizer")])
_FOLLOWS_COMPUTE = np.array([PHASE_CODES[k] for k in ("bubble", "straggler")])


@dataclass(frozen=True)
class RowTimeline:
    """Repeating phases of W rows (K phases at most per row, padded with kind -1, length 0).

    Attributes
    ----------
    kind : ndarray of int, shape (W, K)
        Index into ``PHASE_KINDS``; -1 pads.
    start_s, duration_s : ndarray, shape (W, K)
        Phase start within the period and length (s); every row tiles ``[0, period_s]``.
    period_s : float
        Repetition period (s): the step time, plus stagger waits or cap stretch.
    """

    kind: np.ndarray
    start_s: np.ndarray
    duration_s: np.ndarray
    period_s: float

    @property
    def n_rows(self) -> int:
        return int(self.kind.shape[0])


def rows_from_stages(timeline) -> RowTimeline:
    """The rows of a ``StageTimeline``: one per pipeline stage, period = step time."""
    kind = np.asarray(timeline.kind, dtype=np.int64)
    duration = np.where(kind >= 0, np.maximum(np.asarray(timeline.duration_s, dtype=float), 0.0), 0.0)
    start = np.where(kind >= 0, np.asarray(timeline.start_s, dtype=float), 0.0)
    return RowTimeline(kind=kind, start_s=start, duration_s=duration, period_s=float(timeline.step_time_s))


def _retile(kind: np.ndarray, duration: np.ndarray) -> RowTimeline:
    """Rows laid back to back from their durations; shorter rows end with a wait to the period."""
    duration = np.where(kind >= 0, duration, 0.0)
    end = np.cumsum(duration, axis=1)
    total = end[:, -1] if end.size else np.zeros(kind.shape[0])
    period = float(total.max(initial=0.0))
    kind = np.concatenate([kind, np.full((kind.shape[0], 1), _WAIT)], axis=1)
    duration = np.concatenate([duration, (period - total)[:, None]], axis=1)
    start = np.cumsum(duration, axis=1) - duration
    return RowTimeline(kind=kind, start_s=start, duration_s=duration, period_s=period)


def cap_stretch(level_w: np.ndarray, cap_w: float, idle_w: float) -> np.ndarray:
    """Duration factor of every phase kind under a GPU power cap, shape (len(PHASE_KINDS),).

    A compute kind drawing ``P > cap`` runs ``((P - idle) / (cap - idle)) ** (1/CAP_EXPONENT)``
    times longer (P_dyn ~ f^3, time ~ 1/f; see ``format.power.CAP_EXPONENT``); bubbles and
    straggler waits stretch like the backward pass they wait for; communication does not.
    """
    level_w = np.asarray(level_w, dtype=float)
    dynamic = np.maximum(level_w - idle_w, 0.0)
    headroom = max(cap_w - idle_w, 1e-9)
    factor = np.maximum(dynamic / headroom, 1.0) ** (1.0 / CAP_EXPONENT)
    stretch = np.ones(len(PHASE_KINDS))
    stretch[_COMPUTE_KINDS] = factor[_COMPUTE_KINDS]
    stretch[_FOLLOWS_COMPUTE] = factor[PHASE_CODES["backward"]]
    return stretch


def capped_rows(rows: RowTimeline, level_w: np.ndarray, cap_w: float, idle_w: float) -> RowTimeline:
    """Rows with every phase stretched by :func:`cap_stretch`, re-tiled; the period is the
    longest row and the others wait (straggler) at its end."""
    stretch = np.append(cap_stretch(level_w, cap_w, idle_w), 1.0)  # index -1: padding
    return _retile(rows.kind, rows.duration_s * stretch[rows.kind])


def staggered_rows(rows: RowTimeline, groups: int, offset_s: float) -> RowTimeline:
    """Rows of ``groups`` stagger groups: row ``w * groups + g`` starts its step ``g * offset_s``
    late and waits ``(groups - 1 - g) * offset_s`` at its end for the step's barrier, so every
    group repeats with period ``period_s + (groups - 1) * offset_s``.
    """
    if groups <= 1:
        return rows
    n_rows, _ = rows.kind.shape
    g = np.arange(groups, dtype=float)
    lead = np.tile(g * offset_s, n_rows)[:, None]
    tail = np.tile((groups - 1 - g) * offset_s, n_rows)[:, None]
    wait = np.full((n_rows * groups, 1), _WAIT)
    kind = np.concatenate([wait, np.repeat(rows.kind, groups, axis=0), wait], axis=1)
    duration = np.concatenate([lead, np.repeat(rows.duration_s, groups, axis=0), tail], axis=1)
    start = np.cumsum(duration, axis=1) - duration
    return RowTimeline(
        kind=kind, start_s=start, duration_s=duration, period_s=rows.period_s + (groups - 1) * offset_s
    )


def row_energy_j(rows: RowTimeline, level_w: np.ndarray, clock_s: np.ndarray) -> np.ndarray:
    """Energy one GPU of each row has drawn from clock 0 to ``clock_s`` (J), shape (W, C).

    The phase power is piecewise constant and periodic, so the energy is piecewise linear:
    ``n * E_period + E(start of phase j) + P_j * (u - start_j)`` with ``u = clock mod period``;
    the phase of every (row, clock) pair comes from one ``searchsorted`` over all rows' phase
    starts, offset by row. Negative clocks run the periodic pattern backwards in time.
    """
    clock_s = np.asarray(clock_s, dtype=float)
    period = rows.period_s
    valid = rows.kind >= 0
    row_of = np.broadcast_to(np.arange(rows.n_rows)[:, None], rows.kind.shape)[valid]
    start = rows.start_s[valid]
    power = np.append(np.asarray(level_w, dtype=float), 0.0)[rows.kind[valid]]
    energy = power * rows.duration_s[valid]
    cumulative = np.cumsum(energy)
    per_row = np.bincount(row_of, weights=energy, minlength=rows.n_rows)
    first = np.cumsum(per_row) - per_row
    before = cumulative - energy - first[row_of]  # energy of the row's earlier phases
    turns = np.floor(clock_s / period)
    within = np.clip(clock_s - turns * period, 0.0, period)
    spacing = 2.0 * period + 1.0
    keys = row_of * spacing + start
    rows_index = np.arange(rows.n_rows)[:, None]
    # Within phase j the energy is offset[j] + power[j] * u (u: position in the period).
    offset = before - power * start
    boundaries = np.unique(start)
    if boundaries.size < within.size:
        # Fewer distinct phase starts than clock values: locate each clock among the merged
        # starts once, and every row's phase at every merged start once (a table).
        slot = np.searchsorted(boundaries, within, side="right") - 1
        table = np.searchsorted(keys, (rows_index * spacing + boundaries[None, :]).ravel(), side="right") - 1
        table = table.reshape(rows.n_rows, boundaries.size)
        intercept, slope = offset[table][:, slot], power[table][:, slot]
    else:
        queries = (rows_index * spacing + within[None, :]).ravel()
        phase = np.searchsorted(keys, queries, side="right").reshape(rows.n_rows, within.size) - 1
        intercept, slope = offset[phase], power[phase]
    return turns[None, :] * per_row[:, None] + intercept + slope * within[None, :]


@dataclass(frozen=True)
class JobStates:
    """Per-sample job state on a time grid (n samples of ``dt_s`` from ``t0_s``).

    Attributes
    ----------
    train, stall, down : ndarray, shape (n,)
        Fractions of each sample spent training, in a checkpoint stall, down (crashed or not
        started); they sum to 1.
    ramp : ndarray, shape (n,)
        Start/restart ramp factor at the sample's middle (0 at the ramp start, 1 after it).
    clock_s : ndarray, shape (n + 1,)
        Job clock (seconds of training) at every sample edge, 0 at time 0.
    """

    train: np.ndarray
    stall: np.ndarray
    down: np.ndarray
    ramp: np.ndarray
    clock_s: np.ndarray


def _merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals ``[starts, ends)`` as disjoint sorted intervals (vectorized)."""
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if starts.size == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    new = np.concatenate([[True], starts[1:] > reach[:-1]])  # a gap before: a new union starts
    return starts[new], np.maximum.reduceat(reach, np.flatnonzero(new))


def _coverage(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Seconds of ``edges[i] .. edges[i+1]`` inside the union of the intervals, shape (n,)."""
    starts, ends = _merged(starts, ends)
    if starts.size == 0:
        return np.zeros(edges.size - 1)
    covered_before = np.concatenate([[0.0], np.cumsum(ends - starts)])
    # Covered time before x: whole intervals ending before x plus the part of the one holding x.
    j = np.searchsorted(starts, edges, side="right")  # intervals starting at or before x
    inside = np.clip(edges - starts[np.maximum(j - 1, 0)], 0.0, (ends - starts)[np.maximum(j - 1, 0)])
    total = covered_before[np.maximum(j - 1, 0)] + np.where(j > 0, inside, 0.0)
    return np.diff(total)


def job_states(events: JobEvents, *, t0_s: float, dt_s: float, n: int) -> JobStates:
    """Fractions of training / stall / down time per sample from an event log.

    ``checkpoint`` (t, d): stalled on [t, t+d). ``crash`` (t, d): down on [t, t+d), then the job
    resumes at full power unless a restart follows. ``start``/``restart`` (t, d): down from the
    end of the previous event (from the beginning of time for the first) until t, then the
    job's power above idle ramps linearly from 0 to 1 over d. Down wins over stall where they
    overlap. The job clock advances only while training and is 0 at time 0.

    Parameters
    ----------
    events : JobEvents
    t0_s, dt_s : float
        Start of the first sample and sample length (s).
    n : int
        Samples.
    """
    edges = t0_s + dt_s * np.arange(n + 1)
    time, kind, length = events.time_s, events.kind, events.duration_s
    end = time + length
    is_stall = kind == EVENT_CODES["checkpoint"]
    is_crash = kind == EVENT_CODES["crash"]
    is_ramp = (kind == EVENT_CODES["start"]) | (kind == EVENT_CODES["restart"])
    previous_end = np.concatenate([[-np.inf], np.maximum.accumulate(end)[:-1]]) if end.size else end
    down_from = np.where(np.isfinite(previous_end), previous_end, min(t0_s, time.min(initial=t0_s)) - dt_s)
    down_starts = np.concatenate([time[is_crash], down_from[is_ramp]])
    down_ends = np.concatenate([end[is_crash], time[is_ramp]])
    down = np.clip(_coverage(down_starts, down_ends, edges) / dt_s, 0.0, 1.0)
    stall = np.minimum(np.clip(_coverage(time[is_stall], end[is_stall], edges) / dt_s, 0.0, 1.0), 1.0 - down)
    train = np.clip(1.0 - down - stall, 0.0, 1.0)
    middle = edges[:-1] + 0.5 * dt_s
    ramp_time, ramp_length = time[is_ramp], length[is_ramp]
    last = np.searchsorted(ramp_time, middle, side="right") - 1
    since = middle - ramp_time[np.maximum(last, 0)] if ramp_time.size else np.zeros(n)
    span = ramp_length[np.maximum(last, 0)] if ramp_time.size else np.ones(n)
    ramp = np.where(last >= 0, np.clip(np.divide(since, span, out=np.ones(n), where=span > 0), 0.0, 1.0), 1.0)
    clock = np.concatenate([[0.0], np.cumsum(train * dt_s)])
    zero = np.interp(0.0, edges, clock)  # the job clock reads 0 at time 0
    return JobStates(train=train, stall=stall, down=down, ramp=ramp, clock_s=clock - zero)


def gpu_targets_w(
    rows: RowTimeline, level_w: np.ndarray, *, stall_w: float, idle_w: float, states: JobStates, dt_s: float
) -> np.ndarray:
    """Bin-averaged target power of one GPU of each row in every sample (W), shape (W, n).

    Training time draws the row's phase power (exact average over the job-clock interval the
    sample covers), above idle scaled by the ramp; stalled time ``stall_w``; down time
    ``idle_w``.
    """
    energy = row_energy_j(rows, level_w, states.clock_s)
    training_w = np.diff(energy, axis=1) / dt_s  # already weighted by the training fraction
    idle_part = idle_w * states.train
    return idle_part + states.ramp * (training_w - idle_part) + stall_w * states.stall + idle_w * states.down


def first_order(target: np.ndarray, *, dt_s: float, tau_s: float, warmup: int = 0) -> np.ndarray:
    """Bin-averaged first-order response ``tau dP/dt = target - P`` (W), shape of ``target``.

    With the target constant within each sample (zero-order hold) the response is exact:
    ``P[n+1] = a P[n] + (1 - a) x[n]`` at sample edges with ``a = exp(-dt/tau)``, and its
    average over sample n is ``x[n] + (P[n] - x[n]) g`` with ``g = tau (1 - a) / dt``. The state
    starts at the first target. The recursion is evaluated as a convolution with the kernel
    ``(1 - a) a^k`` (one FFT along time for all rows), truncated where ``a^k < 1e-17``;
    ``warmup`` leading samples are dropped from the result.
    """
    target = np.asarray(target, dtype=float)
    if tau_s <= 0.0:
        return target[:, warmup:]
    a = float(np.exp(-dt_s / tau_s))
    gain = tau_s * (1.0 - a) / dt_s
    n = target.shape[1]
    taps = int(min(np.ceil(40.0 * tau_s / dt_s), n)) + 1
    kernel = (1.0 - a) * a ** np.arange(taps)
    initial = target[:, :1]
    # P[n+1] - P[0] a^(n+1) = sum_k (1 - a) a^k x[n - k]: convolve the deviation from P[0].
    size = 1 << int(np.ceil(np.log2(n + taps)))
    deviation = np.fft.irfft(
        np.fft.rfft(target - initial, size, axis=1) * np.fft.rfft(kernel, size), size, axis=1
    )
    after = initial + deviation[:, :n]
    edge = np.concatenate([initial, after[:, :-1]], axis=1)  # P at each sample's start
    return (target + (edge - target) * gain)[:, warmup:]


def moving_average(series: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over ``window`` samples along the last axis (the first value extends back)."""
    series = np.asarray(series, dtype=float)
    if window <= 1:
        return series.copy()
    first = np.repeat(series[..., :1], window, axis=-1)
    padded = np.concatenate([first, series], axis=-1)
    cumulative = np.cumsum(padded, axis=-1)
    return (cumulative[..., window:] - cumulative[..., :-window]) / window


def block_mean(series: np.ndarray, block: int) -> np.ndarray:
    """Means of consecutive blocks of ``block`` samples along the last axis (a short last block)."""
    series = np.asarray(series, dtype=float)
    if block <= 1:
        return series.copy()
    n = series.shape[-1]
    starts = np.arange(0, n, block)
    sums = np.add.reduceat(series, starts, axis=-1)
    return sums / np.diff(np.append(starts, n))


def band_share(series: np.ndarray, *, dt_s: float, band_hz: tuple[float, float]) -> tuple[float, float]:
    """Share of the variance of a series inside a frequency band, and that part's RMS.

    ``x = series - mean``, ``X = rfft(x)``, one-sided weights ``w_k = 2`` (``1`` at DC and the
    Nyquist bin). By Parseval ``var(x) = sum_k w_k |X_k|^2 / N^2``; the share is
    ``sum_{low <= f_k <= high} w_k |X_k|^2 / sum_{k >= 1} w_k |X_k|^2`` (0 for a flat series)
    and the band RMS ``sqrt(sum_band w_k |X_k|^2) / N`` (the series' unit).
    """
    return band_shares(series, dt_s=dt_s, bands_hz=[band_hz])[0]


def band_shares(
    series: np.ndarray, *, dt_s: float, bands_hz: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """:func:`band_share` of each band, from one transform of the series."""
    x = np.asarray(series, dtype=float)
    n = x.size
    if n < 2:
        return [(0.0, 0.0)] * len(bands_hz)
    spectrum = np.abs(np.fft.rfft(x - x.mean())) ** 2
    weight = np.full(spectrum.size, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    power = spectrum * weight
    freq = np.fft.rfftfreq(n, d=dt_s)
    total = float(power[1:].sum())
    out = []
    for low, high in bands_hz:  # a few bands, each a vectorized sum
        in_band = float(power[(freq >= low) & (freq <= high) & (freq > 0)].sum())
        out.append((in_band / total if total > 0 else 0.0, float(np.sqrt(in_band) / n)))
    return out


def series_figures(series_mw: np.ndarray, *, dt_s: float) -> dict[str, float]:
    """Peak, trough, mean, swing (MW), time of peak and trough (s), largest ramp (MW/s)."""
    series_mw = np.asarray(series_mw, dtype=float)
    ramp = float(np.abs(np.diff(series_mw)).max(initial=0.0) / dt_s)
    peak_at, trough_at = int(np.argmax(series_mw)), int(np.argmin(series_mw))
    return {
        "peak_mw": float(series_mw[peak_at]),
        "trough_mw": float(series_mw[trough_at]),
        "mean_mw": float(series_mw.mean()),
        "swing_mw": float(series_mw[peak_at] - series_mw[trough_at]),
        "peak_time_s": peak_at * dt_s,
        "trough_time_s": trough_at * dt_s,
        "max_ramp_mw_per_s": ramp,
    }


def minute_swing_mw(series_mw: np.ndarray, *, dt_s: float) -> float:
    """Largest rise or fall of the 1-s mean draw within any minute (MW): what a utility's ramp
    limit in MW/min bounds. The 1-s means drop the step-scale swing a ramp limit does not
    address (the band cap does); a series shorter than a minute gives its whole range."""
    series_mw = np.asarray(series_mw, dtype=float)
    if series_mw.size == 0:
        return 0.0
    per_s = block_mean(series_mw, max(round(1.0 / dt_s), 1)) if dt_s < 1.0 else series_mw
    step_s = max(dt_s, 1.0)
    span = min(max(round(60.0 / step_s), 1) + 1, per_s.size)  # samples 60 s apart, both ends
    # centred windows of `span` samples: max - min over every minute of the series
    high = maximum_filter1d(per_s, span, mode="nearest")
    low = minimum_filter1d(per_s, span, mode="nearest")
    return float((high - low).max())


def longest_low_run_s(pattern: np.ndarray, dt_s: float) -> float:
    """Longest circular run of samples below the midpoint of the pattern's range (s)."""
    pattern = np.asarray(pattern, dtype=float)
    if pattern.size == 0 or np.ptp(pattern) <= 0:
        return 0.0
    low = pattern < 0.5 * (pattern.max() + pattern.min())
    if low.all():
        return pattern.size * dt_s
    shift = int(np.argmin(low))  # start right after a high sample so no run wraps around
    low = np.roll(low, -shift)
    edges = np.diff(np.concatenate([[0], low.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return float((ends - starts).max(initial=0)) * dt_s
