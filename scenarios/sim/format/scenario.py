"""Scenario files: parse and validate the YAML dict into frozen dataclasses.

A scenario (``version: 1``) is a cluster, a training job and optional what-if overrides; the
format is documented in ``docs/scenario-format.md``. Every rule violation raises
:class:`ScenarioError` with one line naming the field and the rule. Catalog-dependent rules
(known slugs, GPU count, fp8 support) are checked by :func:`check_scenario`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from scenarios.sim.format.errors import ScenarioError
from scenarios.sim.format.failures import FailureSpec, parse_failures
from scenarios.sim.format.fields import Field
from scenarios.sim.format.frameworks import FRAMEWORKS, default_framework
from scenarios.sim.format.power import PowerSpec, check_power, parse_power
from scenarios.sim.format.presets import apply_preset
from scenarios.sim.format.schema import (  # noqa: F401  (the format's names, re-exported for callers)
    ATTENTION_KINDS,
    CLUSTER,
    DEFAULT_STRAGGLER_SPREAD,
    ECMP_MODES,
    GENERATORS,
    JOB,
    MAX_NODES,
    MLP_KINDS,
    MODEL,
    MOE,
    PARALLEL,
    PLACEMENTS,
    PRECISIONS,
    RECOMPUTE_MODES,
    SCHEMA_VERSION,
    TOP,
    WHAT_IF,
)
from scenarios.sim.placement import eligible_node_count, job_gpus
from topology.fabric.generators import check_buildable
from topology.fabric.plan import FabricError
from utilities.errors import InputError, clip_message, preview
from utilities.yamlsafe import load_yaml_file


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

    def generator_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``topology.fabric.generators.generate`` (and
        ``check_buildable``) after the generator name."""
        names = ("server", "nodes", "oversubscription", "nic_gbps", "su_nodes", "switch", "tiers")
        return {name: getattr(self, name) for name in names}


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
    overlap_tp: bool = False
    overlap_pp: bool = False
    framework: str = "megatron-core"
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
    nodes: int | None = None
    nic_gbps: float | None = None
    oversubscription: float | None = None
    spine_capacity_scale: float = 1.0
    straggler_spread: float = DEFAULT_STRAGGLER_SPREAD
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
    failures: FailureSpec | None = None
    power: PowerSpec | None = None
    version: int = SCHEMA_VERSION

    def effective_cluster(self) -> ClusterSpec:
        """The cluster with the what-if overrides (server, NIC speed, oversubscription, size)
        applied; at another size the generator sizes tiers, scalable units and switch anew."""
        w, cluster = self.what_if, self.cluster
        if w.nodes is not None and w.nodes != cluster.nodes:
            cluster = replace(cluster, nodes=w.nodes, tiers=None, su_nodes=None, switch=None)
        return replace(
            cluster,
            server=w.server or cluster.server,
            nic_gbps=w.nic_gbps if w.nic_gbps is not None else cluster.nic_gbps,
            oversubscription=(
                w.oversubscription if w.oversubscription is not None else cluster.oversubscription
            ),
        )


# --- sections ------------------------------------------------------------------------------


def _int(data: Mapping[str, Any], key: str, where: str, *, default=None, lo=1, hi=None) -> int:
    """An integer read with the format's rule (for callers outside the declared sections)."""
    return Field(key, key, "int", default=default, required=default is None, lo=lo, hi=hi).read(data, where)


def _parse_cluster(data: Any) -> ClusterSpec:
    values = CLUSTER.read(data)
    if isinstance(values["generator"], str):
        values["generator"] = values["generator"].replace("_", "-")
    values["generator"] = CLUSTER.field("generator").read(values, "cluster")
    return ClusterSpec(**values)


def _parse_moe(data: Any, hidden: int) -> MoeSpec | None:
    if data is None:
        return None
    values = MOE.read(data)
    if values["top_k"] > values["experts"]:
        raise ScenarioError(
            f"job.model.moe.top_k: must be ≤ experts ({values['experts']}) (got {values['top_k']})"
        )
    if values["expert_ffn_hidden"] is None:
        values["expert_ffn_hidden"] = 4 * hidden
    return MoeSpec(**values)


def _parse_model(data: Any) -> ModelSpec:
    data = apply_preset(data)
    values = MODEL.read(data)
    values.pop("preset", None)  # expanded into the keys above
    hidden, heads = values["hidden"], values["heads"]
    if hidden % heads:
        raise ScenarioError(f"job.model.hidden: must be divisible by heads ({heads}) (got {hidden})")
    values["kv_heads"] = values["kv_heads"] or heads
    if heads % values["kv_heads"]:
        raise ScenarioError(f"job.model.kv_heads: must divide heads ({heads}) (got {values['kv_heads']})")
    ffn_given = values["ffn_hidden"] is not None
    values["ffn_hidden"] = values["ffn_hidden"] or 4 * hidden
    if values["mlp"] is None:
        values["mlp"] = "swiglu" if ffn_given and values["ffn_hidden"] != 4 * hidden else "gelu"
    return ModelSpec(**values, moe=_parse_moe(data.get("moe"), hidden))


def _parse_parallel(data: Any) -> ParallelSpec:
    return ParallelSpec(**PARALLEL.read(data))


def _parse_job(data: Any) -> JobSpec:
    values = JOB.read(data)
    for section in ("model", "parallel"):
        if section not in data:
            raise ScenarioError(f"job.{section}: required")
    _apply_framework(values, data)
    return JobSpec(model=_parse_model(data["model"]), parallel=_parse_parallel(data["parallel"]), **values)


def _apply_framework(values: dict, data: Any) -> None:
    """Fill the keys ``job.framework``'s preset governs where the job does not name them
    (``scenarios/sim/format/frameworks.py``); explicit job keys win."""

    def given(key):
        return data.get(key) is not None

    name = values["framework"] or default_framework(values["precision"])
    preset = FRAMEWORKS[name]
    values["framework"] = name
    if preset.precision and not given("precision"):
        values["precision"] = preset.precision
    if values["precision"] == "fp8" and not preset.fp8:
        raise ScenarioError(
            f"job.precision: {name} has no fp8 training (Transformer Engine fp8 came with "
            "Megatron-Core); use framework megatron-core or nemo-fp8"
        )
    for key in ("overlap_dp", "overlap_tp", "overlap_pp"):
        if not given(key):
            values[key] = getattr(preset, key)
    if not given("attention"):
        values["attention"] = preset.attention or default_attention(values["precision"])


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
    return WhatIf(**WHAT_IF.read(data))


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
    data = TOP.mapping(data)
    version = data.get("version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise ScenarioError(f"version: must be {SCHEMA_VERSION} (got {preview(version)})")
    name = data.get("name", "scenario")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"name: must be a non-empty string (got {preview(name)})")
    TOP.field("name").read(data, "")
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
        failures=parse_failures(data["failures"]) if data.get("failures") is not None else None,
        power=parse_power(data["power"]) if data.get("power") is not None else None,
    )


@dataclass(frozen=True, eq=False)
class CheckedScenario:
    """A scenario that passed :func:`check_scenario` against ``catalog`` (and only
    ``check_scenario`` makes one). The core's entry points (``predict``, ``search_layouts``, the
    failure and power studies) take it to skip validating again: a run validates its scenario
    once, at the entry of its task, and the derived predictions of one study (the degraded
    fabrics' step times) reuse that validation. A plain ``Scenario`` is always validated."""

    scenario: Scenario
    catalog: Any = field(repr=False)


def checked_scenario(scenario: Scenario | CheckedScenario, catalog) -> CheckedScenario:
    """``scenario`` validated against ``catalog``: as given when it is a ``CheckedScenario`` of
    this very catalog, else through :func:`check_scenario`."""
    if isinstance(scenario, CheckedScenario):
        if scenario.catalog is catalog:
            return scenario
        scenario = scenario.scenario
    return check_scenario(scenario, catalog)


def check_scenario(scenario: Scenario, catalog) -> CheckedScenario:
    """Catalog-dependent rules: known slugs, the job's nodes and GPU count, precision support.

    Parameters
    ----------
    scenario : Scenario
    catalog : topology.fabric.specs.Catalog

    Returns
    -------
    CheckedScenario
        The scenario, marked as valid against this catalog.
    """
    cluster = scenario.effective_cluster()
    server, gpu = _check_slugs(scenario, cluster, catalog)
    _check_buildable(cluster, catalog)
    _check_job_nodes(scenario.job, cluster, server)
    _check_job_gpus(scenario.job, cluster, server)
    spares = scenario.failures.spare_servers if scenario.failures is not None else None
    if spares is not None and spares > cluster.nodes:
        raise ScenarioError(
            f"failures.spare_servers: must be ≤ the cluster's {cluster.nodes:,} servers "
            f"(got {scenario.failures.spare_servers:,})"
        )
    if scenario.power is not None:
        check_power(scenario.power, tdp_w=gpu.tdp_w, idle_w=gpu.idle_w)
    if scenario.job.precision == "fp8" and gpu.peak_tflops_fp8 <= 0:
        raise ScenarioError(f"job.precision: {gpu.slug} has no fp8 tensor cores (got fp8)")
    if any(n >= cluster.nodes for n in scenario.what_if.slow_nodes):
        raise ScenarioError(
            f"what_if.slow_nodes: node indices must be < nodes ({cluster.nodes}) "
            f"(got {max(scenario.what_if.slow_nodes)})"
        )
    return CheckedScenario(scenario, catalog)


def _check_slugs(scenario: Scenario, cluster: ClusterSpec, catalog):
    """The server, GPU and switch the scenario names exist: (server, gpu) specs."""
    what_if = scenario.what_if
    server = _lookup(catalog.server, cluster.server, "what_if.server" if what_if.server else "cluster.server")
    gpu = _lookup(catalog.gpu, what_if.gpu or server.gpu, "what_if.gpu" if what_if.gpu else "gpu")
    if cluster.switch is not None:
        _lookup(catalog.switch, cluster.switch, "cluster.switch")
    return server, gpu


def _check_job_gpus(job: JobSpec, cluster: ClusterSpec, server) -> None:
    """The parallel degrees multiply to the GPUs the job runs on."""
    gpus, counted = job_gpus(
        job,
        cluster_nodes=cluster.nodes,
        gpus_per_server=server.gpus_per_server,
        scaleup_domain_gpus=server.scaleup_domain_gpus,
    )
    p = job.parallel
    if p.gpus != gpus:
        raise ScenarioError(
            f"job.parallel: dp × tp × pp × cp must equal {counted} "
            f"(got {p.dp} × {p.tp} × {p.pp} × {p.cp} = {p.gpus})"
        )


def _check_buildable(cluster: ClusterSpec, catalog) -> None:
    """The generator can build the cluster: the real node limit of its server and switch."""

    try:
        check_buildable(cluster.generator, catalog=catalog, **cluster.generator_kwargs())
    except FabricError as exc:
        raise ScenarioError(clip_message(f"cluster.{exc}")) from None


def _check_job_nodes(job: JobSpec, cluster: ClusterSpec, server) -> None:
    """``job.gpus_per_domain`` fits the server's scale-up domain; ``job.nodes`` fits the cluster
    (and the nodes eligible under ``gpus_per_domain``). Part of :func:`check_scenario`."""

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
    try:
        data = load_yaml_file(path)
    except InputError as exc:  # the loader's refusal, as the format's one error type
        raise ScenarioError(str(exc)) from None
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
