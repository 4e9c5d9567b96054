"""Feed, rack and panel power algebra: capacities, A/B shares, loss cases, signature statistics.

Every rack draws its power split equally over its feeds (A and B sides share it). When one feed
is lost its share moves equally onto the rack's remaining feeds; when a whole side is lost the
rack's share moves onto its feeds of the other side. A feed's three-phase capacity is
``sqrt(3) V_LL I pf`` times the continuous-load derating (NEC 210.19(A)(1) / 215.2(A)(1): a
continuous load may use 80 % of the circuit rating).

Time series are never held per rack or per feed: every entity (rack, feed in a loss case,
panel) is a non-negative combination of the per-row GPU series and the per-server series, so
``entity(t) = coefficients[e] @ X(t) + constant[e]``. Entities with equal coefficients share one
*signature* series; :func:`signature_stats` evaluates each signature once, in chunks, and maps
peaks, means and the first time over a limit back to the entities.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from topology.fabric.specs import feed_capacity_kw

__all__ = [
    "EntityStats",
    "LossCases",
    "feed_capacity_kw",
    "feed_loads",
    "feed_loads_kw",
    "loss_cases",
    "rack_max_of_feeds",
    "signature_stats",
]

#: Elements of one chunk of signature series (float64: 64 MB), bounding the working memory.
CHUNK_ELEMENTS = 8_000_000


def _incidence(pair_feed: np.ndarray, pair_rack: np.ndarray, n_racks: int, n_feeds: int) -> sparse.csr_matrix:
    return sparse.csr_matrix((np.ones(pair_feed.size), (pair_rack, pair_feed)), shape=(n_racks, n_feeds))


def feed_loads_kw(
    rack_kw: np.ndarray, pair_feed: np.ndarray, pair_rack: np.ndarray, n_feeds: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Load of every feed with all feeds up and after its worst single feed loss (kW).

    Rack ``r`` with ``n_r`` feeds puts ``P_r / n_r`` on each. When feed ``g`` is lost, feed
    ``h != g`` gains ``M[h, g] = sum over racks r fed by both of P_r / (n_r (n_r - 1))``, with
    ``M = A^T diag(w) A`` (A the rack-by-feed incidence): one sparse product, no loop over
    feeds. The worst loss for ``h`` is ``max over g != h of M[h, g]``.

    Parameters
    ----------
    rack_kw : ndarray, shape (R,)
    pair_feed, pair_rack : ndarray of int, shape (K,)
        Feed and rack of every feed-to-rack connection.
    n_feeds : int

    Returns
    -------
    (normal_kw, worst_kw, worst_lost_feed) : ndarray (F,), ndarray (F,), ndarray of int (F,)
        The lost feed of the worst case is -1 when no loss adds load (single-fed racks).
    """
    rack_kw = np.asarray(rack_kw, dtype=float)
    n_racks = rack_kw.size
    if n_feeds == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    feeds_per_rack = np.bincount(pair_rack, minlength=n_racks).astype(float)
    share = np.divide(rack_kw, feeds_per_rack, out=np.zeros(n_racks), where=feeds_per_rack > 0)
    normal_kw = np.bincount(pair_feed, weights=share[pair_rack], minlength=n_feeds)
    incidence = _incidence(pair_feed, pair_rack, n_racks, n_feeds)
    moved = np.divide(share, feeds_per_rack - 1.0, out=np.zeros(n_racks), where=feeds_per_rack > 1)
    extra = (incidence.T @ sparse.diags(moved) @ incidence).tocsr()
    extra.setdiag(0.0)
    extra.eliminate_zeros()
    worst_extra = np.zeros(n_feeds)
    worst_feed = np.full(n_feeds, -1, dtype=np.int64)
    if extra.nnz:
        worst_extra = np.asarray(extra.max(axis=1).todense()).ravel()
        worst_feed = np.asarray(extra.argmax(axis=1)).ravel().astype(np.int64)
        worst_feed[worst_extra <= 0] = -1
    return normal_kw, normal_kw + worst_extra, worst_feed


def feed_loads(
    rack_kw: np.ndarray, pair_feed: np.ndarray, pair_rack: np.ndarray, capacity_kw: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Load fraction of every feed with all feeds up and after the worst single feed loss.

    :func:`feed_loads_kw` over the derated capacity (a feed of capacity 0 reports 0).

    Returns
    -------
    (normal, worst) : ndarray, (F,) each
    """
    capacity_kw = np.asarray(capacity_kw, dtype=float)
    normal_kw, worst_kw, _ = feed_loads_kw(rack_kw, pair_feed, pair_rack, capacity_kw.size)
    capacity = np.where(capacity_kw > 0, capacity_kw, np.inf)
    return normal_kw / capacity, worst_kw / capacity


def rack_max_of_feeds(
    values: np.ndarray, pair_feed: np.ndarray, pair_rack: np.ndarray, n_racks: int
) -> np.ndarray:
    """Largest per-feed value among each rack's feeds, shape (R,) (0 for a rack without feeds)."""
    out = np.zeros(n_racks)
    if pair_feed.size:
        np.maximum.at(out, pair_rack, np.asarray(values, dtype=float)[pair_feed])
    return out


@dataclass(frozen=True)
class LossCases:
    """Rack weights of every feed in each loss case (sparse, rows = feeds or loss pairs).

    Attributes
    ----------
    normal : csr_matrix, shape (F, R)
        ``1 / n_r`` for every feed-rack connection.
    side_loss : csr_matrix, shape (F, R)
        Each feed's rack weights when the other side is lost entirely: ``1 / n_r^side`` (the
        rack's feeds on this feed's side) for racks that also have feeds on the other side,
        ``1 / n_r`` otherwise.
    pair_feed, pair_lost : ndarray of int, shape (Q,)
        Feed ``h`` and lost feed ``g`` of every single-loss case that moves load onto ``h``.
    pair : csr_matrix, shape (Q, R)
        Rack weights of feed ``h`` when ``g`` is lost: ``normal[h] + 1 / (n_r (n_r - 1))`` on
        the racks fed by both.
    """

    normal: sparse.csr_matrix
    side_loss: sparse.csr_matrix
    pair_feed: np.ndarray
    pair_lost: np.ndarray
    pair: sparse.csr_matrix


def loss_cases(
    pair_feed: np.ndarray, pair_rack: np.ndarray, feed_side: np.ndarray, n_racks: int, n_feeds: int
) -> LossCases:
    """Rack weights of every feed: normal, loss of the other side, each single feed loss.

    The single-loss pairs are enumerated per rack (every ordered pair of two of its feeds) with
    ``repeat`` arithmetic, then summed per ``(h, g)`` by a sparse constructor; no loop.
    """
    pair_feed = np.asarray(pair_feed, dtype=np.int64)
    pair_rack = np.asarray(pair_rack, dtype=np.int64)
    side = np.asarray(feed_side, dtype=np.int64)[pair_feed] if pair_feed.size else np.zeros(0, np.int64)
    n_r = np.bincount(pair_rack, minlength=n_racks).astype(float)
    normal = sparse.csr_matrix((1.0 / n_r[pair_rack], (pair_feed, pair_rack)), shape=(n_feeds, n_racks))

    per_side = np.bincount(pair_rack * 2 + side, minlength=2 * n_racks).reshape(n_racks, 2).astype(float)
    both = (per_side > 0).all(axis=1)
    own = per_side[pair_rack, side]
    weight = np.where(both[pair_rack], 1.0 / np.maximum(own, 1.0), 1.0 / n_r[pair_rack])
    side_loss = sparse.csr_matrix((weight, (pair_feed, pair_rack)), shape=(n_feeds, n_racks))

    order = np.argsort(pair_rack, kind="stable")
    feed_sorted, rack_sorted = pair_feed[order], pair_rack[order]
    count = np.bincount(rack_sorted, minlength=n_racks)
    first = np.cumsum(count) - count
    repeats = count[rack_sorted]
    h_at = np.repeat(np.arange(rack_sorted.size), repeats)
    j = np.arange(h_at.size) - np.repeat(np.cumsum(repeats) - repeats, repeats)
    g_at = first[rack_sorted[h_at]] + j
    keep = h_at != g_at
    h, g, r = feed_sorted[h_at[keep]], feed_sorted[g_at[keep]], rack_sorted[h_at[keep]]
    key = h * max(n_feeds, 1) + g
    keys, case = np.unique(key, return_inverse=True)
    moved = 1.0 / (n_r[r] * (n_r[r] - 1.0))
    extra = sparse.csr_matrix((moved, (case, r)), shape=(keys.size, n_racks))
    pair_h, pair_g = keys // max(n_feeds, 1), keys % max(n_feeds, 1)
    return LossCases(
        normal=normal,
        side_loss=side_loss,
        pair_feed=pair_h.astype(np.int64),
        pair_lost=pair_g.astype(np.int64),
        pair=(normal[pair_h] + extra).tocsr(),
    )


@dataclass(frozen=True)
class EntityStats:
    """Full-resolution statistics of E entities (``coefficients @ X + constant``).

    Attributes
    ----------
    peak, mean : ndarray, shape (E,)
        In the unit of ``X`` times the coefficients, plus the constant.
    peak_index : ndarray of int, shape (E,)
        Sample of the peak.
    over_index : ndarray of int, shape (E,)
        First sample above the entity's limit; -1 when it never is.
    signature : ndarray of int, shape (E,)
        The entity's signature (row of ``unique``); entities with equal coefficients share one.
    n_signatures : int
    """

    peak: np.ndarray
    mean: np.ndarray
    peak_index: np.ndarray
    over_index: np.ndarray
    signature: np.ndarray
    n_signatures: int


def signature_stats(
    coefficients: np.ndarray, constant: np.ndarray, limit: np.ndarray, series: np.ndarray
) -> EntityStats:
    """Peak, mean and first crossing of ``limit`` of every entity, one series per signature.

    Parameters
    ----------
    coefficients : ndarray, shape (E, W)
        Weight of each of the W base series in each entity.
    constant : ndarray, shape (E,)
        Time-invariant part of each entity.
    limit : ndarray, shape (E,)
        Crossing threshold (``inf`` for none), in the entity's unit.
    series : ndarray, shape (W, T)
        The base series.

    Notes
    -----
    Signatures are evaluated in chunks of ``CHUNK_ELEMENTS // T`` (a loop over chunks, not over
    entities). The first crossing uses the running maximum of each signature: it is sorted, so
    after offsetting signature ``j`` by ``j * span`` one ``searchsorted`` answers every entity.
    """
    coefficients = np.asarray(coefficients, dtype=float)
    constant = np.asarray(constant, dtype=float)
    n_entities, n_samples = coefficients.shape[0], series.shape[1]
    if n_entities == 0:
        empty = np.zeros(0)
        return EntityStats(
            empty, empty, empty.astype(np.int64), empty.astype(np.int64), empty.astype(np.int64), 0
        )
    # Entities proportional to one another (a feed carrying half a rack) share one series:
    # signatures are directions, coefficients / their sum, rounded against float noise.
    scale = coefficients.sum(axis=1)
    direction = np.round(coefficients / np.where(scale > 0, scale, 1.0)[:, None], 12)
    unique, signature = np.unique(direction, axis=0, return_inverse=True)
    signature = signature.ravel()
    n_sig = unique.shape[0]
    sig_peak = np.empty(n_sig)
    sig_index = np.empty(n_sig, dtype=np.int64)
    over = np.full(n_entities, -1, dtype=np.int64)
    # entity value = scale * signature value + constant; a zero entity never crosses above 0.
    threshold = np.divide(
        np.asarray(limit, dtype=float) - constant, scale, out=np.full(n_entities, np.inf), where=scale > 0
    )
    threshold = np.where((scale == 0) & (np.asarray(limit, dtype=float) < constant), -np.inf, threshold)
    by_signature = np.argsort(signature, kind="stable")
    bounds = np.searchsorted(signature[by_signature], np.arange(n_sig + 1))
    chunk = max(1, CHUNK_ELEMENTS // max(n_samples, 1))
    for lo in range(0, n_sig, chunk):  # chunks of signatures bound the memory
        hi = min(lo + chunk, n_sig)
        values = unique[lo:hi] @ series
        sig_index[lo:hi] = np.argmax(values, axis=1)
        sig_peak[lo:hi] = values[np.arange(hi - lo), sig_index[lo:hi]]
        members = by_signature[bounds[lo] : bounds[hi]]
        crossing = members[threshold[members] < sig_peak[signature[members]]]
        if crossing.size:
            over[crossing] = _first_above(values, signature[crossing] - lo, threshold[crossing])
    mean = coefficients @ series.mean(axis=1) + constant
    return EntityStats(
        peak=scale * sig_peak[signature] + constant,
        mean=mean,
        peak_index=sig_index[signature],
        over_index=over,
        signature=signature,
        n_signatures=n_sig,
    )


def _first_above(values: np.ndarray, row: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """First column where ``values[row[i]] > threshold[i]`` for every i (each known to cross)."""
    running = np.maximum.accumulate(values, axis=1)
    low, high = float(running.min()), float(running.max())
    span = high - low + 2.0
    offsets = np.arange(running.shape[0])[:, None] * span
    flat = (running - low + offsets).ravel()
    query = np.clip(threshold, low - 0.5, high) - low + row * span
    position = np.searchsorted(flat, query, side="right")
    return position - row * running.shape[1]
