"""The sections of a scenario file, declared once (``scenarios.sim.format.fields``): what the parser
reads, what the web form offers, with the same labels, bounds, defaults and help.

Bounds marked "typo guard" reject typos and absurd inputs; they are not physical limits of any
real system (those are checked against the catalog and the fabric in ``check_scenario``).
"""

from __future__ import annotations

from scenarios.sim.format.fields import Field, Section
from scenarios.sim.format.presets import MODEL_PRESETS

SCHEMA_VERSION = 1
GENERATORS = ("rail-optimized", "nvl72", "fat-tree")
RECOMPUTE_MODES = ("none", "selective", "full")
PRECISIONS = ("bf16", "fp16", "fp8")
MLP_KINDS = ("gelu", "swiglu")
ATTENTION_KINDS = ("flash", "fused", "standard")
FRAMEWORK_NAMES = ("megatron-2022", "megatron-core", "nemo-fp8", "deepspeed")  # sim/format/frameworks.py
ECMP_MODES = ("hash", "spread")
PLACEMENTS = ("packed", "spread")  # job.placement (scenarios/sim/placement.py)
#: Default coefficient of variation of a GPU's compute time (what_if.straggler_spread). Sinha et
#: al. ("Not All GPUs Are Created Equal", SC'22, arXiv 2208.11035) measured an average 8 %
#: performance variation across same-SKU GPUs of whole clusters (compute-bound kernels, tens of
#: thousands of V100s on Summit); the expected range of N = 27,648 normal draws is 8.2 sigma, so
#: 8 % is a CV of about 1 %. The step waits for the slowest GPU: E[max of N] - 1 ~ 1 % x
#: sqrt(2 ln N), 1.4 % at 8 GPUs, 4 % at 16,384.
DEFAULT_STRAGGLER_SPREAD = 0.01

# Typo guards.
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
MAX_SLOW_NODES = 100_000
MAX_SEED = 2**63 - 1
#: Characters of a scenario's name: the file's limit, the editor's and the saved scenario's column.
MAX_NAME_LENGTH = 120


def _int(key, label, *, lo=1, hi=MAX_DEGREE, **kw) -> Field:
    return Field(key, label, "int", lo=lo, hi=hi, **kw)


TOP = Section(
    "",
    "Scenario",
    (
        _int(
            "version",
            "Format version",
            lo=SCHEMA_VERSION,
            hi=SCHEMA_VERSION,
            default=SCHEMA_VERSION,
            web=False,
        ),
        Field("name", "Name", "text", default="scenario", hi=MAX_NAME_LENGTH, web=False),
        Field("description", "Description", "text", default="", hi=10_000, web=False),
    ),
    mappings=("cluster", "job", "what_if", "failures", "power", "measured"),
)

CLUSTER = Section(
    "cluster",
    "Cluster",
    (
        Field("generator", "Generator", "choice", default="rail-optimized", choices=GENERATORS),
        Field("server", "Server type", "slug", required=True),
        _int("nodes", "Servers", hi=MAX_NODES, required=True, help="NVL72: compute trays, a multiple of 18"),
        Field("nic_gbps", "NIC speed", "float", lo=0, lo_open=True, hi=100_000, unit="Gb/s"),
        Field("oversubscription", "Oversubscription", "float", default=1.0, lo=1.0, hi=1000, help="2 = 2:1"),
        _int("su_nodes", "Nodes per scalable unit", hi=MAX_NODES),
        _int("tiers", "Switch tiers", lo=2, hi=3),
        Field("switch", "Scale-out switch", "slug"),
    ),
)

MODEL = Section(
    "job.model",
    "Model",
    (
        Field(
            "preset",
            "Model preset",
            "choice",
            choices=tuple(MODEL_PRESETS),
            help="a published architecture (scenarios/sim/format/presets.py); keys given here override it",
        ),
        _int("layers", "Layers", hi=MAX_LAYERS, required=True, help="transformer blocks of the model"),
        _int("hidden", "Hidden size", hi=MAX_HIDDEN, required=True, help="the model's width (d_model)"),
        _int(
            "heads",
            "Attention heads",
            hi=MAX_HEADS,
            required=True,
            help="query heads of each attention layer",
        ),
        _int("kv_heads", "KV heads", hi=MAX_HEADS, help="blank = heads (no grouped-query attention)"),
        _int("ffn_hidden", "FFN hidden size", hi=16 * MAX_HIDDEN, help="blank = 4 × hidden"),
        _int(
            "vocab",
            "Vocabulary",
            hi=MAX_VOCAB,
            required=True,
            help="tokens of the embedding and output layers",
        ),
        _int(
            "seq_len",
            "Sequence length",
            hi=MAX_SEQ_LEN,
            required=True,
            unit="tokens",
            help="context length of each training sequence",
        ),
        Field(
            "mlp",
            "MLP",
            "choice",
            choices=MLP_KINDS,
            help="blank = swiglu when FFN hidden ≠ 4 × hidden (the Llama family), else gelu",
        ),
    ),
    mappings=("moe",),
)

MOE = Section(
    "job.model.moe",
    "Mixture of experts",
    (
        _int("experts", "Experts", hi=MAX_EXPERTS, required=True, help="blank = a dense model"),
        _int(
            "top_k",
            "Experts per token (top-k)",
            hi=MAX_EXPERTS,
            required=True,
            help="routed experts each token is sent to",
        ),
        _int("expert_ffn_hidden", "Expert FFN hidden size", hi=MAX_HIDDEN, help="blank = 4 × hidden"),
    ),
)

JOB = Section(
    "job",
    "Batch and numerics",
    (
        _int(
            "global_batch",
            "Global batch",
            hi=MAX_BATCH,
            required=True,
            unit="sequences",
            help="sequences per optimizer step, over all data-parallel replicas",
        ),
        _int(
            "micro_batch",
            "Micro batch",
            hi=MAX_BATCH,
            required=True,
            unit="sequences",
            help="sequences each GPU computes per forward and backward pass",
        ),
        Field(
            "recompute",
            "Activation recompute",
            "choice",
            default="none",
            choices=RECOMPUTE_MODES,
            help="redo activations in the backward pass: less memory, more compute (selective: attention)",
        ),
        Field(
            "precision",
            "Precision",
            "choice",
            default="bf16",
            choices=PRECISIONS,
            help="number format of the matrix multiplies (fp8 needs a GPU with fp8 tensor cores)",
        ),
        _int(
            "zero",
            "ZeRO stage",
            lo=0,
            hi=3,
            default=0,
            help="1 shards the optimizer state over data parallel, 2 also gradients, 3 also weights",
        ),
        Field(
            "attention",
            "Attention kernel",
            "choice",
            choices=ATTENTION_KINDS,
            help=(
                "flash = FlashAttention-2, fused = cuDNN / FlashAttention-3 class; "
                "blank = the framework's (standard with fp16, else flash)"
            ),
        ),
        Field(
            "overlap_dp",
            "Overlap DP communication",
            "bool",
            default=True,
            help="run the data-parallel gradient reduction under the backward pass",
        ),
        # File-only (web=False): a checkbox always sends a value, which would override the
        # framework preset's choice for every web scenario.
        Field("overlap_tp", "Overlap TP communication with GEMMs", "bool", default=False, web=False),
        Field("overlap_pp", "Overlap pipeline sends with compute", "bool", default=False, web=False),
        Field(
            "framework",
            "Training framework",
            "choice",
            choices=FRAMEWORK_NAMES,
            help="blank = megatron-2022 with fp16, else megatron-core; sets the overlaps and kernels",
        ),
        Field(
            "tokens", "Training tokens", "float", lo=0, lo_open=True, hi=1e18, help="for the time to train"
        ),
        _int("nodes", "Servers the job uses", hi=MAX_NODES, help="blank = every server of the cluster"),
        Field(
            "placement",
            "Placement",
            "choice",
            default="packed",
            choices=PLACEMENTS,
            help="packed: the job's servers next to each other; spread: over the whole fabric",
        ),
        _int(
            "gpus_per_domain",
            "GPUs used per scale-up domain",
            help="e.g. 64 of the 72 GPUs of an NVL72 rack; blank = all",
        ),
    ),
    mappings=("model", "parallel"),
)

PARALLEL = Section(
    "job.parallel",
    "Parallelism",
    (
        _int(
            "tp",
            "Tensor parallel (tp)",
            required=True,
            help="GPUs splitting each layer's matrix multiplies (fastest inside one server)",
        ),
        _int(
            "pp",
            "Pipeline parallel (pp)",
            required=True,
            help="stages the layers are split into, one after the other",
        ),
        _int(
            "dp",
            "Data parallel (dp)",
            required=True,
            help="replicas of the model; tp × pp × dp × cp = the job's GPUs",
        ),
        _int(
            "cp", "Context parallel (cp)", default=1, help="GPUs splitting each sequence (for long contexts)"
        ),
        _int(
            "ep",
            "Expert parallel (ep)",
            default=1,
            help="GPUs the experts are spread over (MoE), within dp × cp",
        ),
        _int(
            "vpp",
            "Virtual stages (vpp)",
            default=1,
            help="model chunks per pipeline stage (interleaved schedule: a smaller bubble)",
        ),
    ),
)

WHAT_IF = Section(
    "what_if",
    "What if",
    (
        Field("server", "Server type", "slug", help="build the cluster from another server"),
        Field("gpu", "GPU type", "slug", help="run the job on another GPU (same server and fabric)"),
        _int("nodes", "Servers in the cluster", hi=MAX_NODES, help="blank = the design's servers"),
        Field(
            "nic_gbps",
            "NIC speed",
            "float",
            lo=0,
            lo_open=True,
            hi=100_000,
            unit="Gb/s",
            help="scale-out NIC speed per GPU; blank = the server's",
        ),
        Field("oversubscription", "Fabric oversubscription", "float", lo=1.0, hi=1000, help="e.g. 2 for 2:1"),
        Field(
            "spine_capacity_scale",
            "Spine capacity",
            "float",
            default=1.0,
            lo=0.0,
            lo_open=True,
            hi=1.0,
            help="0.5 = leaf-spine and spine-core links at half speed",
        ),
        Field(
            "straggler_spread",
            "Straggler spread",
            "float",
            default=DEFAULT_STRAGGLER_SPREAD,
            lo=0.0,
            hi=0.9,
            help="σ of per-GPU step time; blank = 0.01, what Sinha et al. (SC'22) measured; 0 = ideal",
        ),
        Field(
            "slow_nodes",
            "Slow nodes",
            "indices",
            default=(),
            hi=MAX_SLOW_NODES,
            unit="node",
            help="node indices or names, comma separated",
        ),
        Field(
            "slow_node_factor",
            "Slow-node factor",
            "float",
            default=1.25,
            lo=1.0,
            hi=100,
            help="how much slower the slow nodes compute (1.25 = 25 % slower)",
        ),
        _int("steps", "Steps simulated", hi=MAX_STEPS, default=64, help="for the straggler statistics"),
        _int(
            "seed",
            "Seed",
            lo=0,
            hi=MAX_SEED,
            default=0,
            help="of the straggler draws: the same seed gives the same result",
        ),
        Field(
            "ecmp",
            "ECMP",
            "choice",
            default="spread",
            choices=ECMP_MODES,
            help="how flows share equal-cost paths: hash (flows may collide) or spread (evenly)",
        ),
    ),
)

#: Keys of ``what_if`` that ask for another cluster than the scenario's (generated like it).
CLUSTER_WHAT_IFS = ("server", "nic_gbps", "oversubscription", "nodes")
