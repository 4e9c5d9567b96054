"""Rank -> GPU mapping and the communication groups of a parallel training job.

Megatron-LM order (tensor fastest, then context, expert, data, pipeline): dense rank
``r = t + tp*(c + cp*(d + dp*p))`` for tensor index ``t``, context ``c``, data ``d`` and pipeline
stage ``p``. Experts are carved out of the data x context span as Megatron-core's expert rank
generator does (order "tp-cp-ep-dp-pp" with cp folded into dp): the flattened index
``c + cp*d`` is read as ``e + ep*f`` with expert-parallel index ``e`` and expert-data index ``f``
(Megatron-LM ``megatron/core/parallel_state.py``, ``RankGenerator``).

Groups are index arrays ``[n_groups, group_size]`` of ranks, members in rank order; the GPU of
a rank is ``layout.rank_gpu[rank]`` (identity by default: rank r runs on GPU r, so the fastest
axis, tensor parallelism, stays inside a server as Megatron's launcher places it; a job on part
of a cluster gets the ``rank_gpu`` of ``scenarios.sim.placement``, the r-th GPU of its nodes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scenarios.sim.format.scenario import ScenarioError

__all__ = ["KIND_NAMES", "Layout", "build_layout"]

#: Communication kinds. "dp_cp" is the gradient-reduction group when context parallelism is on
#: (data x context ranks hold the same weights); "edp" is the expert-data-parallel group that
#: reduces expert gradients when ep > 1.
KIND_NAMES = ("tp", "cp", "ep", "pp", "dp", "dp_cp", "edp")

_MAX_DEGREE = 1 << 20


@dataclass(frozen=True)
class Layout:
    """A job's parallel degrees and where each rank runs.

    Attributes
    ----------
    tp, pp, dp, cp, ep : int
        Tensor, pipeline, data, context and expert parallel degrees (ep divides dp*cp).
    rank_gpu : ndarray of int, shape (W,)
        GPU index of each rank, ``W = tp*pp*dp*cp``; a permutation of a subset of GPUs.
    """

    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    rank_gpu: np.ndarray = field(repr=False)

    @property
    def world_size(self) -> int:
        """Number of ranks ``W``."""
        return self.tp * self.pp * self.dp * self.cp

    def group_size(self, kind: str) -> int:
        """Members per group of ``kind``."""
        sizes = {
            "tp": self.tp,
            "cp": self.cp,
            "ep": self.ep,
            "pp": self.pp,
            "dp": self.dp,
            "dp_cp": self.dp * self.cp,
            "edp": self.dp * self.cp // self.ep,
        }
        try:
            return sizes[kind]
        except KeyError:
            raise ValueError(f"kind: must be one of {', '.join(KIND_NAMES)} (got {kind!r})") from None

    def groups(self, kind: str) -> np.ndarray:
        """Ranks of every group of ``kind``.

        Returns
        -------
        ndarray of int, shape (W // size, size)
            Row i lists the ranks of group i in increasing order.
        """
        size = self.group_size(kind)
        ranks = np.arange(self.world_size, dtype=np.int64)
        if kind in ("ep", "edp"):
            grid = ranks.reshape(self.pp, self.dp * self.cp // self.ep, self.ep, self.tp)
            axis = 2 if kind == "ep" else 1
        elif kind == "dp_cp":
            grid = ranks.reshape(self.pp, self.dp * self.cp, self.tp)
            axis = 1
        else:
            grid = ranks.reshape(self.pp, self.dp, self.cp, self.tp)
            axis = {"pp": 0, "dp": 1, "cp": 2, "tp": 3}[kind]
        return np.moveaxis(grid, axis, -1).reshape(-1, size)

    def gpu_groups(self, kind: str) -> np.ndarray:
        """GPUs of every group of ``kind``, shape (W // size, size)."""
        return self.rank_gpu[self.groups(kind)]


def build_layout(
    *,
    tp: int,
    pp: int,
    dp: int,
    cp: int = 1,
    ep: int = 1,
    n_gpus: int | None = None,
    rank_gpu: np.ndarray | None = None,
) -> Layout:
    """Check the degrees and build the :class:`Layout`.

    Parameters
    ----------
    tp, pp, dp, cp, ep : int
        Parallel degrees, each >= 1; ``ep`` must divide ``dp * cp``.
    n_gpus : int, optional
        GPUs available; when given, ``tp*pp*dp*cp`` must equal it.
    rank_gpu : ndarray of int, shape (W,), optional
        Explicit placement (distinct GPU indices); identity when omitted.

    Raises
    ------
    ScenarioError
        With one line naming the field and the rule broken.
    """
    degrees = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep}
    for name, value in degrees.items():
        if isinstance(value, bool) or int(value) != value or not 1 <= value <= _MAX_DEGREE:
            raise ScenarioError(f"parallel.{name}: must be an integer in [1, {_MAX_DEGREE}] (got {value})")
    world = int(tp) * int(pp) * int(dp) * int(cp)
    if (int(dp) * int(cp)) % int(ep):
        raise ScenarioError(f"parallel.ep: must divide dp*cp = {int(dp) * int(cp)} (got {ep})")
    if n_gpus is not None and world != int(n_gpus):
        raise ScenarioError(f"parallel: tp*pp*dp*cp must equal the GPU count {n_gpus} (got {world})")
    if rank_gpu is None:
        placement = np.arange(world, dtype=np.int64)
    else:
        placement = np.asarray(rank_gpu, dtype=np.int64)
        if placement.shape != (world,):
            raise ScenarioError(f"rank_gpu: must have one GPU per rank ({world}), got {placement.shape}")
        if np.unique(placement).size != world or placement.min(initial=0) < 0:
            raise ScenarioError("rank_gpu: GPU indices must be distinct and >= 0")
    return Layout(tp=int(tp), pp=int(pp), dp=int(dp), cp=int(cp), ep=int(ep), rank_gpu=placement)
