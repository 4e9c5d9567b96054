"""Scenario files: parse and validate the YAML dict into frozen dataclasses.

A scenario (``version: 1``) is a cluster, a training job and optional what-if overrides; the
format is documented in ``docs/scenario-format.md``. Every rule violation raises
:class:`ScenarioError` with one line naming the field and the rule. Catalog-dependent rules
(known slugs, GPU count, fp8 support) are checked by :func:`check_scenario`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from scenarios.sim.errors import ScenarioError, clip_message, preview
from scenarios.sim.yamlsafe import load_yaml_file

SCHEMA_VERSION = 1
GENERATORS = ("rail-optimized", "nvl72", "fat-tree")
RECOMPUTE_MODES = ("none", "selective", "full")
PRECISIONS = ("bf16", "fp16", "fp8")
MLP_KINDS = ("gelu", "swiglu")
ATTENTION_KINDS = ("flash", "standard")
ECMP_MODES = ("hash", "spread")
PLACEMENTS = ("packed", "spread")  # job.placement (scenarios/sim/placement.py)

# Upper bounds that reject typos and absurd inputs (not physical limits of any real system).
MAX_NODES = 1_000_000
MAX_LAYERS = 10_000
MAX_HIDDEN = 1_000_000
MAX_HEADS = 100_000
MAX_VOCAB = 10_000_000
MAX_SEQ_LEN = 10_000_000
MAX_BATCH = 100_000_000
MAX_DEGREE = 1_000_000
MAX_EXPERTS = 100_000
MAX_STEPS = 1_000_000


@dataclass(frozen=True)
class ClusterSpec:
    """The cluster to build: generator name and its parameters (see ``topology.fabric``)."""

    generator: str
    server: str
    nodes: int
    nic_gbps: float | None = None
    oversubscription: float = 1.0
    su_nodes: int | None = None
    tiers: int | None = None
    switch: str | None = None


@dataclass(frozen=True)
class MoeSpec:
    """Mixture-of-experts MLP: ``experts`` experts of ``expert_ffn_hidden``, ``top_k`` per token."""

    experts: int
    top_k: int
    expert_ffn_hidden: int


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer.

    ``mlp`` is "gelu" (two matrices, h x f and f x h) or "swiglu" (three matrices: gate, up,
    down). When omitted it is "swiglu" if ``ffn_hidden`` is given and differs from 4*hidden
    (the Llama family), else "gelu" (GPT/Megatron).
    """

    layers: int
    hidden: int
    heads: int
    vocab: int
    seq_len: int
    kv_heads: int
    ffn_hidden: int
    mlp: str = "gelu"
    moe: MoeSpec | None = None

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_hidden(self) -> int:
        """Width of the K (or V) projection: kv_heads * head_dim."""
        return self.kv_heads * self.head_dim


@dataclass(frozen=True)
class ParallelSpec:
    """Parallel degrees: tensor, pipeline, data, context, expert (within dp × cp), virtual stages."""

    tp: int
    pp: int
    dp: int
    cp: int = 1
    ep: int = 1
    vpp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp


@dataclass(frozen=True)
class JobSpec:
    """A training job: model, batch, parallel layout and numerics, and where it runs.

    ``nodes`` (default: every server of the cluster, or every eligible one under
    ``gpus_per_domain``), ``placement`` ("packed" or "spread") and ``gpus_per_domain`` (GPUs used
    per scale-up domain) place the job on part of the cluster (``scenarios/sim/placement.py``).
    """

    model: ModelSpec
    global_batch: int
    micro_batch: int
    parallel: ParallelSpec
    recompute: str = "none"
    precision: str = "bf16"
    zero: int = 0
    tokens: float | None = None
    attention: str = "flash"
    overlap_dp: bool = True
    nodes: int | None = None
    placement: str = "packed"
    gpus_per_domain: int | None = None

    @property
    def microbatches(self) -> int:
        """Microbatches per pipeline per step (``m``)."""
        return self.global_batch // (self.micro_batch * self.parallel.dp)


@dataclass(frozen=True)
class WhatIf:
    """Overrides and perturbations applied on top of the cluster and job."""

    gpu: str | None = None
    server: str | None = None
    nic_gbps: float | None = None
    oversubscription: float | None = None
    spine_capacity_scale: float = 1.0
    straggler_spread: float = 0.0
    slow_nodes: tuple[int, ...] = ()
    slow_node_factor: float = 1.25
    steps: int = 64
    seed: int = 0
    ecmp: str = "spread"


@dataclass(frozen=True)
class Scenario:
    """One scenario file: cluster, job and what-if (``measured`` blocks are ignored)."""

    name: str
    cluster: ClusterSpec
    job: JobSpec
    what_if: WhatIf = field(default_factory=WhatIf)
    version: int = SCHEMA_VERSION

    def effective_cluster(self) -> ClusterSpec:
        """The cluster with the what-if overrides (server, NIC speed, oversubscription) applied."""
        w = self.what_if
        return replace(
            self.cluster,
            server=w.server or self.cluster.server,
            nic_gbps=w.nic_gbps if w.nic_gbps is not None else self.cluster.nic_gbps,
            oversubscription=(
                w.oversubscription if w.oversubscription is not None else self.cluster.oversubscription
            ),
        )


# --- field readers -------------------------------------------------------------------------


def _mapping(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: must be a mapping (got {type(data).__name__})")
    return data


def _reject_unknown(data: Mapping[str, Any], where: str, known: set[str]) -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        prefix = f"{where}." if where else ""
        raise ScenarioError(f"{prefix}{unknown[0]}: unknown field (known: {', '.join(sorted(known))})")


def _int(
    data: Mapping[str, Any],
    key: str,
    where: str,
    *,
    default: int | None = None,
    lo: int = 1,
    hi: int = MAX_DEGREE,
) -> int:
    name = f"{where}.{key}" if where else key
    if key not in data or data[key] is None:
        if default is None:
            raise ScenarioError(f"{name}: required")
        return default
    value = data[key]
    # JSON (web, API) can bring inf, nan or a 5,000-digit integer: int(inf) raises and str() of
    # a huge integer does too, so test the type first and quote a preview.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{name}: must be an integer (got {preview(value)})")
    if isinstance(value, float) and not value.is_integer():
        raise ScenarioError(f"{name}: must be an integer (got {value!r})")
    value = int(value)
    if value < lo or value > hi:
        shown = preview(value) if value.bit_length() > 100 else None
        if value < lo:
            raise ScenarioError(f"{name}: must be ≥ {lo} (got {shown or value})")
        raise ScenarioError(f"{name}: must be ≤ {hi:,} (got {shown or f'{value:,}'})")
    return value


def _float(
    data: Mapping[str, Any],
    key: str,
    where: str,
    *,
    default: float | None,
    lo: float,
    hi: float,
    lo_open: bool = False,
) -> float | None:
    name = f"{where}.{key}" if where else key
    if key not in data or data[key] is None:
        return default
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScenarioError(f"{name}: must be a finite number (got {value!r})")
    value = float(value)
    if (value <= lo) if lo_open else (value < lo):
        raise ScenarioError(f"{name}: must be {'>' if lo_open else '≥'} {lo:g} (got {value:g})")
    if value > hi:
        raise ScenarioError(f"{name}: must be ≤ {hi:g} (got {value:g})")
    return value


def _choice(data: Mapping[str, Any], key: str, where: str, choices: tuple[str, ...], default):
    name = f"{where}.{key}" if where else key
    value = data.get(key, default)
    if value is None:
        return default
    if value not in choices:
        raise ScenarioError(f"{name}: must be one of {', '.join(choices)} (got {value!r})")
    return value


def _slug(data: Mapping[str, Any], key: str, where: str, *, required: bool) -> str | None:
    name = f"{where}.{key}"
    value = data.get(key)
    if value is None:
        if required:
            raise ScenarioError(f"{name}: required")
        return None
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{name}: must be a catalog slug (got {value!r})")
    return value


# --- sections ------------------------------------------------------------------------------


def _parse_cluster(data: Any) -> ClusterSpec:
    data = _mapping(data, "cluster")
    where = "cluster"
    _reject_unknown(
        data,
        where,
        {"generator", "server", "nodes", "nic_gbps", "oversubscription", "su_nodes", "tiers", "switch"},
    )
    generator = data.get("generator", "rail-optimized")
    if isinstance(generator, str):
        generator = generator.replace("_", "-")
    if generator not in GENERATORS:
        raise ScenarioError(f"cluster.generator: must be one of {', '.join(GENERATORS)} (got {generator!r})")
    tiers = data.get("tiers")
    if tiers is not None and tiers not in (2, 3):
        raise ScenarioError(f"cluster.tiers: must be 2 or 3 (got {tiers!r})")
    return ClusterSpec(
        generator=generator,
        server=_slug(data, "server", where, required=True),
        nodes=_int(data, "nodes", where, hi=MAX_NODES),
        nic_gbps=_float(data, "nic_gbps", where, default=None, lo=0, hi=100_000, lo_open=True),
        oversubscription=_float(data, "oversubscription", where, default=1.0, lo=1.0, hi=1000),
        su_nodes=(_int(data, "su_nodes", where, hi=MAX_NODES) if data.get("su_nodes") is not None else None),
        tiers=tiers,
        switch=_slug(data, "switch", where, required=False),
    )


def _parse_moe(data: Any, hidden: int) -> MoeSpec | None:
    if data is None:
        return None
    where = "job.model.moe"
    data = _mapping(data, where)
    _reject_unknown(data, where, {"experts", "top_k", "expert_ffn_hidden"})
    experts = _int(data, "experts", where, hi=MAX_EXPERTS)
    top_k = _int(data, "top_k", where, hi=MAX_EXPERTS)
    if top_k > experts:
        raise ScenarioError(f"job.model.moe.top_k: must be ≤ experts ({experts}) (got {top_k})")
    return MoeSpec(
        experts=experts,
        top_k=top_k,
        expert_ffn_hidden=_int(data, "expert_ffn_hidden", where, default=4 * hidden, hi=MAX_HIDDEN),
    )


def _parse_model(data: Any) -> ModelSpec:
    where = "job.model"
    data = _mapping(data, where)
    _reject_unknown(
        data,
        where,
        {"layers", "hidden", "heads", "vocab", "seq_len", "kv_heads", "ffn_hidden", "mlp", "moe"},
    )
    hidden = _int(data, "hidden", where, hi=MAX_HIDDEN)
    heads = _int(data, "heads", where, hi=MAX_HEADS)
    if hidden % heads:
        raise ScenarioError(f"job.model.hidden: must be divisible by heads ({heads}) (got {hidden})")
    kv_heads = _int(data, "kv_heads", where, default=heads, hi=MAX_HEADS)
    if heads % kv_heads:
        raise ScenarioError(f"job.model.kv_heads: must divide heads ({heads}) (got {kv_heads})")
    ffn_given = data.get("ffn_hidden") is not None
    ffn_hidden = _int(data, "ffn_hidden", where, default=4 * hidden, hi=16 * MAX_HIDDEN)
    default_mlp = "swiglu" if ffn_given and ffn_hidden != 4 * hidden else "gelu"
    return ModelSpec(
        layers=_int(data, "layers", where, hi=MAX_LAYERS),
        hidden=hidden,
        heads=heads,
        vocab=_int(data, "vocab", where, hi=MAX_VOCAB),
        seq_len=_int(data, "seq_len", where, hi=MAX_SEQ_LEN),
        kv_heads=kv_heads,
        ffn_hidden=ffn_hidden,
        mlp=_choice(data, "mlp", where, MLP_KINDS, default_mlp),
        moe=_parse_moe(data.get("moe"), hidden),
    )


def _parse_parallel(data: Any) -> ParallelSpec:
    where = "job.parallel"
    data = _mapping(data, where)
    _reject_unknown(data, where, {"tp", "pp", "dp", "cp", "ep", "vpp"})
    return ParallelSpec(
        tp=_int(data, "tp", where),
        pp=_int(data, "pp", where),
        dp=_int(data, "dp", where),
        cp=_int(data, "cp", where, default=1),
        ep=_int(data, "ep", where, default=1),
        vpp=_int(data, "vpp", where, default=1),
    )


def _parse_job(data: Any) -> JobSpec:
    where = "job"
    data = _mapping(data, where)
    _reject_unknown(
        data,
        where,
        {
            "model",
            "global_batch",
            "micro_batch",
            "parallel",
            "recompute",
            "precision",
            "zero",
            "tokens",
            "attention",
            "overlap_dp",
            "nodes",
            "placement",
            "gpus_per_domain",
        },
    )
    if "model" not in data:
        raise ScenarioError("job.model: required")
    if "parallel" not in data:
        raise ScenarioError("job.parallel: required")
    overlap_dp = data.get("overlap_dp", True)
    if not isinstance(overlap_dp, bool):
        raise ScenarioError(f"job.overlap_dp: must be true or false (got {overlap_dp!r})")
    return JobSpec(
        model=_parse_model(data["model"]),
        global_batch=_int(data, "global_batch", where, hi=MAX_BATCH),
        micro_batch=_int(data, "micro_batch", where, hi=MAX_BATCH),
        parallel=_parse_parallel(data["parallel"]),
        recompute=_choice(data, "recompute", where, RECOMPUTE_MODES, "none"),
        precision=_choice(data, "precision", where, PRECISIONS, "bf16"),
        zero=_int(data, "zero", where, default=0, lo=0, hi=3),
        tokens=_float(data, "tokens", where, default=None, lo=0, hi=1e18, lo_open=True),
        attention=_choice(data, "attention", where, ATTENTION_KINDS, None)
        or default_attention(data.get("precision", "bf16")),
        overlap_dp=overlap_dp,
        nodes=_int(data, "nodes", where, hi=MAX_NODES) if data.get("nodes") is not None else None,
        placement=_choice(data, "placement", where, PLACEMENTS, "packed"),
        gpus_per_domain=(
            _int(data, "gpus_per_domain", where, hi=MAX_DEGREE)
            if data.get("gpus_per_domain") is not None
            else None
        ),
    )


def default_attention(precision: str) -> str:
    """Attention kernel when a job does not name one.

    Convention (documented in docs/scenario-format.md): fp16 with loss scaling is the
    Megatron-LM/Apex stack of 2020-2022, which ran the fused scale-mask-softmax attention
    ("standard"); bf16 and fp8 stacks run FlashAttention. Name ``attention`` explicitly when
    this guess is wrong for a job.
    """
    return "standard" if precision == "fp16" else "flash"


def _parse_what_if(data: Any) -> WhatIf:
    if data is None:
        return WhatIf()
    where = "what_if"
    data = _mapping(data, where)
    _reject_unknown(
        data,
        where,
        {
            "gpu",
            "server",
            "nic_gbps",
            "oversubscription",
            "spine_capacity_scale",
            "straggler_spread",
            "slow_nodes",
            "slow_node_factor",
            "steps",
            "seed",
            "ecmp",
        },
    )
    slow = data.get("slow_nodes") or ()
    if not isinstance(slow, list | tuple) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in slow
    ):
        raise ScenarioError(f"what_if.slow_nodes: must be a list of node indices ≥ 0 (got {slow!r})")
    return WhatIf(
        gpu=_slug(data, "gpu", where, required=False),
        server=_slug(data, "server", where, required=False),
        nic_gbps=_float(data, "nic_gbps", where, default=None, lo=0, hi=100_000, lo_open=True),
        oversubscription=_float(data, "oversubscription", where, default=None, lo=1.0, hi=1000),
        spine_capacity_scale=_float(
            data, "spine_capacity_scale", where, default=1.0, lo=0.0, hi=1.0, lo_open=True
        ),
        straggler_spread=_float(data, "straggler_spread", where, default=0.0, lo=0.0, hi=0.9),
        slow_nodes=tuple(sorted(set(slow))),
        slow_node_factor=_float(data, "slow_node_factor", where, default=1.25, lo=1.0, hi=100),
        steps=_int(data, "steps", where, default=64, hi=MAX_STEPS),
        seed=_int(data, "seed", where, default=0, lo=0, hi=2**63 - 1),
        ecmp=_choice(data, "ecmp", where, ECMP_MODES, "spread"),
    )


# --- job rules that need no catalog --------------------------------------------------------


def check_job(job: JobSpec) -> None:
    """Divisibility and layout rules of a job (raises :class:`ScenarioError`)."""
    m, p = job.model, job.parallel
    if m.heads % p.tp:
        raise ScenarioError(f"job.parallel.tp: must divide heads ({m.heads}) (got {p.tp})")
    if m.kv_heads % p.tp and p.tp % m.kv_heads:
        raise ScenarioError(
            f"job.parallel.tp: must divide kv_heads ({m.kv_heads}) or be a multiple of it (got {p.tp})"
        )
    if m.layers < p.pp:
        raise ScenarioError(f"job.parallel.pp: must be ≤ layers ({m.layers}) (got {p.pp})")
    layers_per_stage = -(-m.layers // p.pp)
    if p.vpp > layers_per_stage:
        raise ScenarioError(
            f"job.parallel.vpp: must be ≤ layers per stage ({layers_per_stage}) (got {p.vpp})"
        )
    if p.vpp > 1 and p.pp < 2:
        raise ScenarioError(f"job.parallel.vpp: interleaving needs pp ≥ 2 (got vpp {p.vpp}, pp 1)")
    if m.seq_len % p.cp:
        raise ScenarioError(f"job.parallel.cp: must divide seq_len ({m.seq_len}) (got {p.cp})")
    if (p.dp * p.cp) % p.ep:
        raise ScenarioError(f"job.parallel.ep: must divide dp × cp ({p.dp * p.cp}) (got {p.ep})")
    if p.ep > 1 and m.moe is None:
        raise ScenarioError(f"job.parallel.ep: needs job.model.moe (got ep {p.ep})")
    if m.moe is not None and m.moe.experts % p.ep:
        raise ScenarioError(f"job.parallel.ep: must divide moe.experts ({m.moe.experts}) (got {p.ep})")
    if job.global_batch % (job.micro_batch * p.dp):
        raise ScenarioError(
            f"job.global_batch: must be a multiple of micro_batch × dp "
            f"({job.micro_batch} × {p.dp}) (got {job.global_batch})"
        )
    if p.vpp > 1 and job.microbatches % p.pp:
        # Megatron-LM's interleaved schedule requires it (megatron/core/pipeline_parallel/schedules.py).
        raise ScenarioError(
            f"job.global_batch: interleaving needs microbatches per pipeline "
            f"({job.microbatches}) to be a multiple of pp ({p.pp})"
        )


def parse_scenario(data: Any) -> Scenario:
    """Parse and validate one scenario dict (as read from YAML).

    Raises
    ------
    ScenarioError
        One line naming the field and the rule.
    """
    data = _mapping(data, "scenario")
    _reject_unknown(data, "", {"version", "name", "description", "cluster", "job", "what_if", "measured"})
    version = data.get("version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise ScenarioError(f"version: must be {SCHEMA_VERSION} (got {version!r})")
    name = data.get("name", "scenario")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"name: must be a non-empty string (got {name!r})")
    for section in ("cluster", "job"):
        if section not in data:
            raise ScenarioError(f"{section}: required")
    job = _parse_job(data["job"])
    check_job(job)
    return Scenario(
        name=name,
        cluster=_parse_cluster(data["cluster"]),
        job=job,
        what_if=_parse_what_if(data.get("what_if")),
    )


def check_scenario(scenario: Scenario, catalog) -> None:
    """Catalog-dependent rules: known slugs, the job's nodes and GPU count, precision support.

    Parameters
    ----------
    scenario : Scenario
    catalog : topology.fabric.specs.Catalog
    """
    cluster = scenario.effective_cluster()
    server = _lookup(catalog.server, cluster.server, "cluster.server")
    gpu_slug = scenario.what_if.gpu or server.gpu
    gpu = _lookup(catalog.gpu, gpu_slug, "what_if.gpu" if scenario.what_if.gpu else "gpu")
    if cluster.switch is not None:
        _lookup(catalog.switch, cluster.switch, "cluster.switch")
    _check_job_nodes(scenario.job, cluster, server)
    from scenarios.sim.placement import job_gpus  # placement imports this module

    gpus, counted = job_gpus(
        scenario.job,
        cluster_nodes=cluster.nodes,
        gpus_per_server=server.gpus_per_server,
        scaleup_domain_gpus=server.scaleup_domain_gpus,
    )
    p = scenario.job.parallel
    if p.gpus != gpus:
        raise ScenarioError(
            f"job.parallel: dp × tp × pp × cp must equal {counted} "
            f"(got {p.dp} × {p.tp} × {p.pp} × {p.cp} = {p.gpus})"
        )
    if scenario.job.precision == "fp8" and gpu.peak_tflops_fp8 <= 0:
        raise ScenarioError(f"job.precision: {gpu.slug} has no fp8 tensor cores (got fp8)")
    if any(n >= cluster.nodes for n in scenario.what_if.slow_nodes):
        raise ScenarioError(
            f"what_if.slow_nodes: node indices must be < nodes ({cluster.nodes}) "
            f"(got {max(scenario.what_if.slow_nodes)})"
        )


def _check_job_nodes(job: JobSpec, cluster: ClusterSpec, server) -> None:
    """``job.gpus_per_domain`` fits the server's scale-up domain; ``job.nodes`` fits the cluster
    (and the nodes eligible under ``gpus_per_domain``). Part of :func:`check_scenario`."""
    from scenarios.sim.placement import eligible_node_count

    per_server, domain = server.gpus_per_server, server.scaleup_domain_gpus
    if job.gpus_per_domain is not None:
        if job.gpus_per_domain % per_server:
            raise ScenarioError(
                f"job.gpus_per_domain: must be a multiple of gpus_per_server ({per_server} on "
                f"{server.slug}) (got {job.gpus_per_domain})"
            )
        if job.gpus_per_domain > domain:
            raise ScenarioError(
                f"job.gpus_per_domain: must be ≤ scaleup_domain_gpus ({domain} on {server.slug}) "
                f"(got {job.gpus_per_domain})"
            )
    if job.nodes is None:
        return
    if job.nodes > cluster.nodes:
        raise ScenarioError(f"job.nodes: must be ≤ cluster.nodes ({cluster.nodes}) (got {job.nodes})")
    eligible = eligible_node_count(
        cluster_nodes=cluster.nodes,
        gpus_per_server=per_server,
        scaleup_domain_gpus=domain,
        gpus_per_domain=job.gpus_per_domain,
    )
    if job.nodes > eligible:
        raise ScenarioError(
            f"job.nodes: must be ≤ the nodes eligible under job.gpus_per_domain {job.gpus_per_domain} "
            f"({eligible}: {job.gpus_per_domain // per_server} of every {max(domain // per_server, 1)} "
            f"servers) (got {job.nodes})"
        )


def _lookup(getter, slug: str, field_name: str):
    try:
        return getter(slug)
    except (KeyError, ValueError) as exc:
        message = str(exc).split(": ", 1)[-1]
        raise ScenarioError(f"{field_name}: {message}") from None


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Read a YAML file holding one scenario or a ``scenarios:`` list of them.

    The file goes through the bounded loader (``yamlsafe``: size, depth, aliases, duplicate
    keys, numbers), so any input ends in one short :class:`ScenarioError` line.
    """
    data = load_yaml_file(path)
    if data is None:
        raise ScenarioError("file: empty (expected a scenario mapping)")
    try:
        if isinstance(data, Mapping) and "scenarios" in data:
            entries = data["scenarios"]
            if not isinstance(entries, list) or not entries:
                raise ScenarioError("scenarios: must be a non-empty list")
            return [parse_scenario(entry) for entry in entries]
        return [parse_scenario(data)]
    except ScenarioError as exc:
        # The validators quote whole values ("got [...]"); a file's value may be long.
        raise ScenarioError(clip_message(str(exc))) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read a YAML file holding exactly one scenario (the first of a ``scenarios:`` list)."""
    return load_scenarios(path)[0]
