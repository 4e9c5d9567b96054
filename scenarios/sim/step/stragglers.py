"""Stragglers: per-GPU speed variation and what it costs a synchronous training step.

Model (assumed, stated so it can be argued with): each GPU's compute time in a step is its
nominal time times ``persistent_factor[g] * (1 + spread * z[g, step])`` with ``z`` standard
normal (clipped so a factor never drops below ``MIN_JITTER_FACTOR``). ``persistent_factor`` is 1
except on named slow nodes. A synchronous data-parallel step waits for every GPU (the gradient
all-reduce needs every replica, every replica needs every stage and tensor-parallel member), so
the step's compute takes ``max_g`` of the factors; the straggler term is the expected excess of
that maximum over 1, times the nominal compute time. Many steps are drawn at once with an
explicit generator; the expected maximum of ``n`` normals grows like ``sqrt(2 ln n)``
(Gumbel), which is why large jobs feel small jitter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["MIN_JITTER_FACTOR", "StragglerEffect", "straggler_effect"]

#: Lower clip of the per-step jitter factor: a GPU is never more than 10x faster than nominal
#: (assumed; only matters for absurd spreads, keeps times positive).
MIN_JITTER_FACTOR = 0.1

#: Upper bound of the (steps x GPUs) draws held in memory at once; larger jobs are drawn in
#: blocks of steps so 131,072 GPUs stay within a few hundred MB.
_MAX_DRAWS_PER_BLOCK = 4_000_000


@dataclass(frozen=True)
class StragglerEffect:
    """What stragglers cost one step.

    Attributes
    ----------
    time_s : float
        Expected extra time per step (s): ``(E[max_g factor] - 1) * compute_time_s``.
    expected_step_factor : float
        ``E[max_g factor]`` over the drawn steps (>= 1 for a non-trivial job).
    step_factor : ndarray, shape (n_steps,)
        The drawn per-step maximum factor.
    per_gpu_slowdown : ndarray, shape (G,)
        Each GPU's mean own compute-time factor over the drawn steps (1 = nominal).
    """

    time_s: float
    expected_step_factor: float
    step_factor: np.ndarray = field(repr=False)
    per_gpu_slowdown: np.ndarray = field(repr=False)


def straggler_effect(
    gpu_node: np.ndarray,
    *,
    compute_time_s: float,
    spread: float = 0.0,
    slow_nodes: Mapping[int, float] | Sequence[int] = (),
    slow_factor: float = 1.0,
    n_steps: int = 64,
    rng: np.random.Generator | int | None = None,
) -> StragglerEffect:
    """Expected straggler time of a synchronous step, drawn over many steps at once.

    Parameters
    ----------
    gpu_node : ndarray of int, shape (G,)
        Node of each GPU of the job (``CompiledFabric.gpu_node``, indexed by GPU).
    compute_time_s : float
        Nominal (straggler-free) compute time of one step (s), >= 0.
    spread : float
        Coefficient of variation of a GPU's per-step compute time (0.02 = 2 %), >= 0.
    slow_nodes : mapping {node: factor} or sequence of node ids
        Persistently slow nodes. A mapping gives each node's time factor (1.3 = 30 % slower);
        a sequence uses ``slow_factor`` for all of them.
    slow_factor : float
        Factor for the nodes given as a sequence, >= 1.
    n_steps : int
        Number of steps drawn, >= 1.
    rng : numpy.random.Generator or int seed or None
        Source of randomness; the same seed gives the same result.

    Returns
    -------
    StragglerEffect
    """
    gpu_node = np.asarray(gpu_node, dtype=np.int64)
    _check(compute_time_s, spread, slow_factor, n_steps)
    rng = np.random.default_rng(rng)
    persistent = _persistent_factor(gpu_node, slow_nodes, slow_factor)
    step_factor, mean_jitter = _draw_step_factors(persistent, spread, n_steps, rng)
    expected = float(step_factor.mean()) if step_factor.size else 1.0
    return StragglerEffect(
        time_s=max(expected - 1.0, 0.0) * float(compute_time_s),
        expected_step_factor=expected,
        step_factor=step_factor,
        per_gpu_slowdown=persistent * mean_jitter,
    )


def _check(compute_time_s: float, spread: float, slow_factor: float, n_steps: int) -> None:
    if not np.isfinite(compute_time_s) or compute_time_s < 0:
        raise ValueError(f"compute_time_s: must be a finite number >= 0 (got {compute_time_s})")
    if not np.isfinite(spread) or spread < 0 or spread > 1:
        raise ValueError(f"spread: must be between 0 and 1 (got {spread})")
    if not np.isfinite(slow_factor) or slow_factor < 1 or slow_factor > 100:
        raise ValueError(f"slow_factor: must be between 1 and 100 (got {slow_factor})")
    if int(n_steps) < 1:
        raise ValueError(f"n_steps: must be >= 1 (got {n_steps})")


def _persistent_factor(
    gpu_node: np.ndarray, slow_nodes: Mapping[int, float] | Sequence[int], slow_factor: float
) -> np.ndarray:
    """Per-GPU persistent time factor, shape (G,)."""
    if isinstance(slow_nodes, Mapping):
        nodes = np.fromiter((int(n) for n in slow_nodes), dtype=np.int64, count=len(slow_nodes))
        factors = np.fromiter((float(f) for f in slow_nodes.values()), dtype=float, count=len(slow_nodes))
    else:
        nodes = np.asarray(list(slow_nodes), dtype=np.int64)
        factors = np.full(nodes.size, float(slow_factor))
    if np.any(~np.isfinite(factors)) or np.any(factors < 1) or np.any(factors > 100):
        raise ValueError("slow_nodes: every factor must be between 1 and 100")
    n_nodes = int(gpu_node.max()) + 1 if gpu_node.size else 0
    if nodes.size and (nodes.min() < 0 or nodes.max() >= n_nodes):
        raise ValueError(f"slow_nodes: node ids must be in [0, {n_nodes}) (got {nodes.tolist()})")
    node_factor = np.ones(n_nodes)
    np.maximum.at(node_factor, nodes, factors)
    return node_factor[gpu_node]


def _draw_step_factors(
    persistent: np.ndarray, spread: float, n_steps: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Draw (n_steps, G) jitter in row-major order; return per-step max and per-GPU mean jitter.

    Rows are drawn in blocks of steps; since the generator fills arrays in order, the result
    equals drawing the whole (n_steps, G) matrix at once.
    """
    n_gpus = persistent.size
    if spread == 0 or n_gpus == 0:
        step_max = np.full(n_steps, float(persistent.max()) if n_gpus else 1.0)
        return step_max, np.ones(n_gpus)
    block = max(1, _MAX_DRAWS_PER_BLOCK // n_gpus)
    step_max = np.empty(n_steps)
    jitter_sum = np.zeros(n_gpus)
    for start in range(0, n_steps, block):  # blocks of steps, bounded memory (not per step)
        rows = min(block, n_steps - start)
        jitter = 1.0 + spread * rng.standard_normal((rows, n_gpus))
        np.maximum(jitter, MIN_JITTER_FACTOR, out=jitter)
        jitter_sum += jitter.sum(axis=0)
        step_max[start : start + rows] = (jitter * persistent).max(axis=1)
    return step_max, jitter_sum / n_steps
