"""The two inputs every step-time function shares with the layout search: the candidate layouts
(parallel degrees, batch split, recompute, ZeRO; one entry per candidate) and the options of
the training stack (precision, attention kernel, what it overlaps, the framework preset).

``predict`` builds both from a job (one candidate); ``search_layouts`` builds the layouts from
its enumeration (hundreds of thousands of candidates) and the options from the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios.sim.format.frameworks import DEFAULT_FRAMEWORK, FRAMEWORKS, Framework
from scenarios.sim.step.efficiency import TILED_ATTENTION
from scenarios.sim.step.flops import RECOMPUTE_CODES

__all__ = ["LAYOUT_COLUMNS", "CandidateLayouts", "StackOptions"]

#: The columns of a layout, in the order of ``CandidateLayouts``' fields after ``global_batch``.
LAYOUT_COLUMNS = ("micro_batch", "tp", "pp", "dp", "cp", "ep", "vpp", "recompute", "zero")
#: Columns held as float arrays (the degrees and the micro-batch); recompute and ZeRO keep their
#: integer codes.
_FLOAT_COLUMNS = LAYOUT_COLUMNS[:7]


@dataclass(frozen=True)
class CandidateLayouts:
    """Parallel layouts of one job's ``global_batch``, one entry per candidate (ints for one
    layout; arrays, broadcast together, for many).

    Attributes
    ----------
    global_batch : int
        Sequences per step.
    micro_batch, tp, pp, dp, cp, ep, vpp : ndarray of float
        Micro-batch size and the tensor, pipeline, data, context, expert parallel degrees and
        virtual stages per GPU.
    recompute : ndarray of int
        Activation recompute code (``flops.RECOMPUTE_CODES``: 0 none, 1 selective, 2 full).
    zero : ndarray of int
        ZeRO stage 0..3.
    microbatches : ndarray of float
        Microbatches per pipeline and step, ``global_batch / (micro_batch dp)`` (derived).
    """

    global_batch: int
    micro_batch: Any = 1
    tp: Any = 1
    pp: Any = 1
    dp: Any = 1
    cp: Any = 1
    ep: Any = 1
    vpp: Any = 1
    recompute: Any = 0
    zero: Any = 0
    microbatches: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in _FLOAT_COLUMNS:
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float))
        object.__setattr__(self, "recompute", np.asarray(self.recompute))
        object.__setattr__(self, "zero", np.asarray(self.zero))
        object.__setattr__(self, "microbatches", self.global_batch / (self.micro_batch * self.dp))

    @classmethod
    def of_job(cls, job) -> CandidateLayouts:
        """The one layout a job asks for."""
        p = job.parallel
        return cls(
            job.global_batch,
            micro_batch=job.micro_batch,
            tp=p.tp,
            pp=p.pp,
            dp=p.dp,
            cp=p.cp,
            ep=p.ep,
            vpp=p.vpp,
            recompute=RECOMPUTE_CODES[job.recompute],
            zero=job.zero,
        )

    @classmethod
    def of_columns(cls, global_batch: int, columns, index=slice(None)) -> CandidateLayouts:
        """The candidates ``index`` of columns named by ``LAYOUT_COLUMNS`` (the layout search's
        enumeration)."""
        return cls(global_batch, **{name: np.asarray(columns[name])[index] for name in LAYOUT_COLUMNS})


@dataclass(frozen=True)
class StackOptions:
    """How the training stack runs a layout: numerics, attention kernel, overlaps, framework.

    Attributes
    ----------
    precision : {"bf16", "fp16", "fp8"}
    attention : {"flash", "fused", "standard"}
        The attention kernel (``efficiency.layer_times``).
    overlap_dp : bool
        Data-parallel reduction / gather overlapped bucket by bucket.
    overlap_tp : bool
        Tensor-parallel collectives overlapped with their GEMMs (Transformer Engine comm-GEMM
        overlap).
    overlap_pp : bool
        Pipeline sends overlapped with the next op's compute.
    framework : Framework
        The stack's bucket sizes and fp8 weight layout (default ``megatron-core``); its overlap
        and kernel choices arrive through the fields above (the job may override them).
    """

    precision: str = "bf16"
    attention: str = "flash"
    overlap_dp: bool = True
    overlap_tp: bool = False
    overlap_pp: bool = False
    framework: Framework = FRAMEWORKS[DEFAULT_FRAMEWORK]

    @classmethod
    def of_job(cls, job) -> StackOptions:
        """The job's stack (its framework preset with the job's own overrides applied)."""
        return cls(
            precision=job.precision,
            attention=job.attention,
            overlap_dp=job.overlap_dp,
            overlap_tp=job.overlap_tp,
            overlap_pp=job.overlap_pp,
            framework=FRAMEWORKS[job.framework],
        )

    @property
    def fp8(self) -> bool:
        return self.precision == "fp8"

    @property
    def fp8_params(self) -> bool:
        """Weights kept (and gathered) in fp8 only."""
        return self.fp8 and self.framework.fp8_params

    @property
    def tiled_attention(self) -> bool:
        """The attention kernel never writes the score matrix to HBM."""
        return self.attention in TILED_ATTENTION
