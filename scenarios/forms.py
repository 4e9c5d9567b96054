"""Forms of the scenarios app: the scenario editor (job + what-if) and the YAML import (each run
kind declares its own options form in ``scenarios.kinds``).

The scenario form is flat (one input per setting) and knows the scenario-file path of every
field (``FIELD_PATHS``), so a ``ValidationError`` from ``scenario_create``/``scenario_update``
keyed ``job.parallel.tp`` (or a message starting ``job.parallel.tp: ...``) lands next to the
``tp`` input.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from scenarios.sim.scenario import (
    ATTENTION_KINDS,
    ECMP_MODES,
    MLP_KINDS,
    PRECISIONS,
    RECOMPUTE_MODES,
)

#: Form field -> path in the scenario file (``job.*`` or ``what_if.*``).
FIELD_PATHS: dict[str, str] = {
    "layers": "job.model.layers",
    "hidden": "job.model.hidden",
    "heads": "job.model.heads",
    "kv_heads": "job.model.kv_heads",
    "ffn_hidden": "job.model.ffn_hidden",
    "vocab": "job.model.vocab",
    "seq_len": "job.model.seq_len",
    "mlp": "job.model.mlp",
    "moe_experts": "job.model.moe.experts",
    "moe_top_k": "job.model.moe.top_k",
    "moe_expert_ffn_hidden": "job.model.moe.expert_ffn_hidden",
    "global_batch": "job.global_batch",
    "micro_batch": "job.micro_batch",
    "tp": "job.parallel.tp",
    "pp": "job.parallel.pp",
    "dp": "job.parallel.dp",
    "cp": "job.parallel.cp",
    "ep": "job.parallel.ep",
    "vpp": "job.parallel.vpp",
    "recompute": "job.recompute",
    "precision": "job.precision",
    "zero": "job.zero",
    "tokens": "job.tokens",
    "attention": "job.attention",
    "overlap_dp": "job.overlap_dp",
    "gpu": "what_if.gpu",
    "server": "what_if.server",
    "nodes": "what_if.nodes",
    "nic_gbps": "what_if.nic_gbps",
    "oversubscription": "what_if.oversubscription",
    "straggler_spread": "what_if.straggler_spread",
    "slow_nodes": "what_if.slow_nodes",
    "slow_node_factor": "what_if.slow_node_factor",
    "steps": "what_if.steps",
    "seed": "what_if.seed",
    "ecmp": "what_if.ecmp",
}
PATH_FIELDS = {path: name for name, path in FIELD_PATHS.items()}
# Aliases the core uses for whole sections or derived checks.
PATH_FIELDS.update(
    {
        "job.parallel": "dp",
        "job.model.moe": "moe_experts",
        "cluster.server": "server",
        "cluster.nodes": "nodes",
        "gpu": "gpu",
    }
)

FIELDSETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Model",
        (
            "layers",
            "hidden",
            "heads",
            "kv_heads",
            "ffn_hidden",
            "vocab",
            "seq_len",
            "mlp",
            "moe_experts",
            "moe_top_k",
            "moe_expert_ffn_hidden",
        ),
    ),
    (
        "Batch and parallelism",
        (
            "global_batch",
            "micro_batch",
            "tp",
            "pp",
            "dp",
            "cp",
            "ep",
            "vpp",
            "recompute",
            "precision",
            "zero",
            "attention",
            "overlap_dp",
            "tokens",
        ),
    ),
    (
        "What if",
        (
            "server",
            "gpu",
            "nodes",
            "nic_gbps",
            "oversubscription",
            "straggler_spread",
            "slow_nodes",
            "slow_node_factor",
            "steps",
            "seed",
            "ecmp",
        ),
    ),
)

_BLANK = [("", "default")]


def _choices(values) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


def _int(label: str, *, required: bool = True, min_value: int = 1, help_text: str = "") -> forms.IntegerField:
    return forms.IntegerField(label=label, required=required, min_value=min_value, help_text=help_text)


class ScenarioForm(forms.Form):
    """A scenario: name, job and what-if overrides (blank what-if fields keep the design's value)."""

    name = forms.CharField(max_length=120)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    layers = _int("Layers")
    hidden = _int("Hidden size")
    heads = _int("Attention heads")
    kv_heads = _int("KV heads", required=False, help_text="blank = heads (no GQA)")
    ffn_hidden = _int("FFN hidden", required=False, help_text="blank = 4 × hidden")
    vocab = _int("Vocabulary")
    seq_len = _int("Sequence length")
    mlp = forms.ChoiceField(label="MLP", required=False, choices=_BLANK + _choices(MLP_KINDS))
    moe_experts = _int("MoE experts", required=False, help_text="blank = dense model")
    moe_top_k = _int("MoE top-k", required=False)
    moe_expert_ffn_hidden = _int("Expert FFN hidden", required=False)

    global_batch = _int("Global batch (sequences)")
    micro_batch = _int("Micro batch")
    tp = _int("Tensor parallel (tp)")
    pp = _int("Pipeline parallel (pp)")
    dp = _int("Data parallel (dp)")
    cp = _int("Context parallel (cp)", required=False)
    ep = _int("Expert parallel (ep)", required=False)
    vpp = _int("Virtual stages (vpp)", required=False)
    recompute = forms.ChoiceField(
        required=False, choices=[("", "default (none)"), *_choices(RECOMPUTE_MODES)]
    )
    precision = forms.ChoiceField(required=False, choices=[("", "default (bf16)"), *_choices(PRECISIONS)])
    zero = forms.IntegerField(
        label="ZeRO stage", required=False, min_value=0, max_value=3, help_text="blank = 0"
    )
    attention = forms.ChoiceField(required=False, choices=_BLANK + _choices(ATTENTION_KINDS))
    overlap_dp = forms.BooleanField(label="Overlap DP communication", required=False, initial=True)
    tokens = forms.FloatField(
        label="Training tokens", required=False, min_value=1, help_text="for time-to-train, e.g. 1e12"
    )

    server = forms.ChoiceField(label="Server type", required=False)
    gpu = forms.ChoiceField(label="GPU type", required=False)
    nodes = _int("Node count", required=False, help_text="blank = the design's nodes")
    nic_gbps = forms.FloatField(label="NIC speed (Gb/s)", required=False, min_value=1)
    oversubscription = forms.FloatField(
        label="Fabric oversubscription", required=False, min_value=1, help_text="e.g. 2 for 2:1"
    )
    straggler_spread = forms.FloatField(
        label="Straggler spread",
        required=False,
        min_value=0,
        max_value=0.9,
        help_text="σ of per-GPU speed, 0–0.9",
    )
    slow_nodes = forms.CharField(
        label="Slow nodes", required=False, help_text="node indices or names, comma separated"
    )
    slow_node_factor = forms.FloatField(label="Slow-node factor", required=False, min_value=1)
    steps = _int("Steps simulated", required=False)
    seed = _int("Seed", required=False, min_value=0)
    ecmp = forms.ChoiceField(label="ECMP", required=False, choices=_BLANK + _choices(ECMP_MODES))

    def __init__(self, *args, catalog_choices: dict[str, list[str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        catalog_choices = catalog_choices or {}
        self.fields["server"].choices = _BLANK + _choices(catalog_choices.get("servers", []))
        self.fields["gpu"].choices = _BLANK + _choices(catalog_choices.get("gpus", []))
        for name, field in self.fields.items():
            if name in FIELD_PATHS:
                field.widget.attrs.setdefault("data-path", FIELD_PATHS[name])

    def fieldsets(self):
        """(legend, [bound fields]) for the template."""
        return [(legend, [self[name] for name in names]) for legend, names in FIELDSETS]

    def clean_slow_nodes(self) -> list[int | str]:
        text = self.cleaned_data.get("slow_nodes") or ""
        out: list[int | str] = []
        for item in (part.strip() for part in text.replace(";", ",").split(",")):
            if not item:
                continue
            out.append(int(item) if item.isdigit() else item)
        return out

    def clean(self):
        data = super().clean()
        moe = [data.get(k) for k in ("moe_experts", "moe_top_k")]
        if any(v is not None for v in moe) and not all(v is not None for v in moe):
            self.add_error("moe_top_k" if moe[0] else "moe_experts", "MoE needs both experts and top-k")
        return data

    # --- to and from the scenario's JSON ----------------------------------------------------

    def job(self) -> dict[str, Any]:
        """The scenario file's ``job:`` mapping from the cleaned data (blank fields omitted)."""
        return _nest({k: v for k, v in self._values().items() if FIELD_PATHS[k].startswith("job.")}, "job.")

    def what_if(self) -> dict[str, Any]:
        """The ``what_if:`` mapping (blank fields omitted: the design's values apply)."""
        return _nest(
            {k: v for k, v in self._values().items() if FIELD_PATHS[k].startswith("what_if.")}, "what_if."
        )

    def _values(self) -> dict[str, Any]:
        out = {}
        for name in FIELD_PATHS:
            value = self.cleaned_data.get(name)
            if value in (None, "", []):
                continue
            if name == "overlap_dp" and value is True:
                continue  # the default
            out[name] = value
        if "overlap_dp" not in out and not self.cleaned_data.get("overlap_dp", True):
            out["overlap_dp"] = False
        return out

    @classmethod
    def initial_from(
        cls, *, name: str, job: dict[str, Any], what_if: dict[str, Any], description: str = ""
    ) -> dict[str, Any]:
        """Initial form values from a scenario's ``job`` and ``what_if`` JSON."""
        flat = _flatten({"job": job or {}, "what_if": what_if or {}})
        initial: dict[str, Any] = {"name": name, "description": description}
        for field, path in FIELD_PATHS.items():
            if path in flat:
                value = flat[path]
                if field == "slow_nodes":
                    value = ", ".join(str(v) for v in value)
                initial[field] = value
        initial.setdefault("overlap_dp", True)
        return initial

    def add_service_errors(self, error: ValidationError) -> None:
        """Put a service's ValidationError next to the fields it names."""
        if hasattr(error, "error_dict"):
            for key, errors in error.error_dict.items():
                for e in errors:
                    for message in e.messages:
                        self._add_located(key, message)
            return
        for message in error.messages:
            path, sep, _ = message.partition(": ")
            self._add_located(path if sep else "", message)

    def _add_located(self, path: str, message: str) -> None:
        field = _field_for_path(path)
        if field is None or field not in self.fields:
            self.add_error(None, message)
        elif field not in self.errors or message not in self.errors[field]:
            self.add_error(field, message.split(": ", 1)[1] if message.startswith(f"{path}: ") else message)


def _field_for_path(path: str) -> str | None:
    """The form field of a scenario path (the longest known prefix: job.model.moe.top_k -> moe_top_k)."""
    if path in ("name", "description"):
        return path
    parts = path.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in PATH_FIELDS:
            return PATH_FIELDS[candidate]
        parts.pop()
    return None


def _nest(values: dict[str, Any], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, value in values.items():
        keys = FIELD_PATHS[field][len(prefix) :].split(".")
        target = out
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        target[keys[-1]] = value
    return out


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{path}."))
        else:
            out[path] = value
    return out


def default_job(*, gpus: int, gpus_per_server: int = 8) -> dict[str, Any]:
    """A valid starting job for a cluster of ``gpus`` GPUs: a Llama-2-7B-shaped model
    (Touvron et al. 2023, Table 1: 32 layers, 4096 hidden, 32 heads, 4k context; FFN 11008, vocab
    32000 from the released config) with tensor parallelism inside a server and data parallelism
    across servers."""
    tp = 8 if gpus % 8 == 0 else (4 if gpus % 4 == 0 else 1)
    dp = max(1, gpus // tp)
    return {
        "model": {
            "layers": 32,
            "hidden": 4096,
            "heads": 32,
            "vocab": 32000,
            "seq_len": 4096,
            "ffn_hidden": 11008,
        },
        "global_batch": dp * 4,
        "micro_batch": 1,
        "parallel": {"tp": tp, "pp": 1, "dp": dp},
        "precision": "bf16",
        "tokens": 1e12,
    }


class ScenarioImportForm(forms.Form):
    """A scenario YAML file (or pasted text) to import onto a design."""

    design = forms.ModelChoiceField(queryset=None, empty_label=None)
    file = forms.FileField(required=False)
    text = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 10}), label="or paste YAML")

    def __init__(self, *args, designs=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["design"].queryset = designs

    def clean(self):
        from scenarios.sim.yamlsafe import MAX_BYTES

        data = super().clean()
        upload = data.get("file")
        if upload:
            if upload.size > MAX_BYTES:
                self.add_error(
                    "file", f"file: must be at most {MAX_BYTES:,} bytes (got {upload.size:,} bytes)"
                )
                return data
            # The bytes go to the loader as they are: it checks the encoding and names the offset.
            data["text"] = upload.read(MAX_BYTES + 1)
        if not data.get("text") and not self.errors:
            self.add_error("text", "upload a file or paste the YAML")
        return data
