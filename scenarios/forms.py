"""Forms of the scenarios app: the scenario editor (job + what-if) and the YAML import (each run
kind declares its own options form in ``scenarios.kinds``).

The scenario form is built from the scenario format's own declarations
(``scenarios.sim.format.schema``): one input per field with the format's label, help and bounds, and the
scenario-file path of every input, so a ``ValidationError`` keyed ``job.parallel.tp`` (or a
message starting ``job.parallel.tp: ...``) from the services lands next to the ``tp`` input. The
rules themselves stay in the core: the form only shapes the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from scenarios.scenario_file import SECTIONS
from scenarios.sim.format import failures as failures_section
from scenarios.sim.format import power as power_section
from scenarios.sim.format import schema
from scenarios.sim.format.fields import Field, Section
from scenarios.sim.format.presets import MODEL_PRESETS
from teams.models import Team
from topology.models import Design

#: The sections the scenario editor offers, in order; a nested optional section (MoE) is saved
#: only when one of its inputs is filled in.
FORM_SECTIONS: tuple[Section, ...] = (
    schema.MODEL,
    schema.MOE,
    schema.JOB,
    schema.PARALLEL,
    schema.WHAT_IF,
    failures_section.FAILURES,
    failures_section.CHECKPOINT,
    failures_section.RATES,
    failures_section.LEMONS,
    power_section.POWER,
    power_section.POWER_GPU,
    power_section.POWER_STORAGE,
)
OPTIONAL_SECTIONS = ("job.model.moe",)
#: Slug fields and the catalog list their choices come from.
CATALOG_CHOICES = {"server": "servers", "gpu": "gpus"}
#: Where errors about a whole section or a derived rule go (the core names the section).
PATH_ALIASES = {
    "job.parallel": "job.parallel.dp",
    "job.model.moe": "job.model.moe.experts",
    "cluster.server": "what_if.server",
    "cluster.nodes": "what_if.nodes",
    "gpu": "what_if.gpu",
}


def _form_names() -> dict[str, str]:
    """Scenario path -> input name: the key, or ``<section>_<key>`` where two sections share it."""
    fields = [(section, f) for section in FORM_SECTIONS for f in section.fields if f.web]
    counts: dict[str, int] = {}
    for _, f in fields:
        counts[f.key] = counts.get(f.key, 0) + 1
    return {
        f"{section.path}.{f.key}": f.key if counts[f.key] == 1 else f"{section.path.split('.')[-1]}_{f.key}"
        for section, f in fields
    }


FIELD_PATHS: dict[str, str] = {name: path for path, name in _form_names().items()}
"""Input name -> scenario path (``"tp"`` -> ``"job.parallel.tp"``)."""
PATH_FIELDS = {path: name for name, path in FIELD_PATHS.items()}
FIELD_SPECS: dict[str, Field] = {
    PATH_FIELDS[f"{section.path}.{f.key}"]: f for section in FORM_SECTIONS for f in section.fields if f.web
}


@dataclass(frozen=True)
class FormGroup:
    """A part of the editor: ``folded`` parts are ``<details>`` a newcomer can leave closed;
    ``fieldsets`` are (legend, input names)."""

    heading: str
    folded: bool
    fieldsets: tuple[tuple[str, tuple[str, ...]], ...]
    summary: str = ""


def _section_names(*sections: Section) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(
        (s.label, tuple(PATH_FIELDS[f"{s.path}.{f.key}"] for f in s.fields if f.web)) for s in sections
    )


#: The editor's order: what a newcomer needs first (the model, the batch, the layout and the
#: cluster what-ifs), then folded parts with plain headings. Every input appears exactly once
#: (``tests/scenarios/test_forms.py`` holds it).
FORM_GROUPS: tuple[FormGroup, ...] = (
    FormGroup(
        "Basics",
        False,
        (
            (
                "Model",
                ("preset", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len", "mlp"),
            ),
            ("Batch", ("global_batch", "micro_batch", "precision", "tokens")),
            ("Layout", ("tp", "pp", "dp", "cp", "ep", "vpp", "recompute", "zero")),
            (
                "Cluster what-ifs",
                ("server", "gpu", "what_if_nodes", "nic_gbps", "oversubscription", "spine_capacity_scale"),
            ),
        ),
    ),
    FormGroup(
        "Mixture of experts",
        True,
        _section_names(schema.MOE),
        "experts per layer and per token; blank for a dense model",
    ),
    FormGroup(
        "Advanced step options",
        True,
        (
            ("Kernels and framework", ("attention", "overlap_dp", "framework")),
            ("Placement and routing", ("job_nodes", "placement", "gpus_per_domain", "ecmp")),
            (
                "Stragglers",
                ("straggler_spread", "slow_nodes", "slow_node_factor", "what_if_steps", "what_if_seed"),
            ),
        ),
        "kernels, framework, placement, stragglers, routing",
    ),
    FormGroup(
        "Failures",
        True,
        _section_names(
            failures_section.FAILURES,
            failures_section.CHECKPOINT,
            failures_section.RATES,
            failures_section.LEMONS,
        ),
        "what a failures run simulates: trials, restarts, checkpoints, hazard rates",
    ),
    FormGroup(
        "Power",
        True,
        _section_names(power_section.POWER, power_section.POWER_GPU, power_section.POWER_STORAGE),
        "what a power run simulates: window, resolution, staggering, caps, storage",
    ),
)


def _help(field: Field) -> str:
    bounds = ""
    if field.kind in ("int", "float") and (field.lo is not None or field.hi is not None):
        lo = "" if field.lo is None else f"{'>' if field.lo_open else '≥'} {field.lo:g}"
        hi = "" if field.hi is None else f"≤ {field.hi:,.0f}" if field.hi >= 1e6 else f"≤ {field.hi:g}"
        bounds = ", ".join(b for b in (lo, hi) if b)
    parts = [p for p in (field.help, field.unit, bounds) if p]
    return " · ".join(parts)


def _input_number(value: Any) -> Any:
    """A float as a number input shows it: whole numbers without ".0", large ones in exponent
    form ("1e12" tokens, not "1000000000000.0"; the page adds "≈ 1.0 T" beside it)."""
    if not isinstance(value, float) or not value.is_integer():
        return value
    return f"{value:.6g}".replace("e+", "e") if abs(value) >= 1e9 else int(value)


def _default_label(field: Field) -> str:
    return f"default ({field.default})" if field.default not in (None, "", ()) else "default"


def form_field(field: Field, *, catalog_choices: dict[str, list[str]]) -> forms.Field:
    """The Django input of one scenario field (validation is the core's; this only shapes it)."""
    common = {"label": field.label, "required": False, "help_text": _help(field)}
    if field.kind == "int":
        return forms.IntegerField(**common)
    if field.kind == "float":
        return forms.FloatField(**common)
    if field.kind == "choice" and field.key == "preset":
        presets = [(slug, preset.label) for slug, preset in MODEL_PRESETS.items()]
        return forms.ChoiceField(choices=[("", "none (inputs below)"), *presets], **common)
    if field.kind == "choice":
        return forms.ChoiceField(
            choices=[("", _default_label(field)), *((c, c) for c in field.choices)], **common
        )
    if field.kind == "bool":
        return forms.BooleanField(initial=field.default, **common)
    if field.kind == "slug":
        slugs = catalog_choices.get(CATALOG_CHOICES.get(field.key, ""), [])
        return forms.ChoiceField(choices=[("", "the design's"), *((c, c) for c in slugs)], **common)
    return forms.CharField(**common)  # indices (a comma-separated list), text


class ScenarioForm(forms.Form):
    """A scenario: name, description, job and what-if overrides (blank inputs keep the design's
    or the format's default)."""

    name = forms.CharField(
        max_length=schema.MAX_NAME_LENGTH, help_text="what the design page, the runs and comparisons call it"
    )
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="the question this what-if asks, for your team",
    )

    def __init__(self, *args, catalog_choices: dict[str, list[str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in FIELD_SPECS.items():
            self.fields[name] = form_field(field, catalog_choices=catalog_choices or {})
            self.fields[name].widget.attrs["data-path"] = FIELD_PATHS[name]

    def read_only(self) -> None:
        """Every input disabled: the editor of a user whose role may view but not change."""
        for field in self.fields.values():
            field.disabled = True

    def presets(self) -> dict[str, dict[str, Any]]:
        """``{slug: {"source", "fields": {input name: value}}}``: what picking a model preset
        fills in on the page (the inputs stay editable; the file format expands the same preset)."""
        out = {}
        for slug, preset in MODEL_PRESETS.items():
            flat = {f"job.model.{k}": v for k, v in preset.model.items() if k != "moe"}
            flat |= {f"job.model.moe.{k}": v for k, v in (preset.model.get("moe") or {}).items()}
            fields = {PATH_FIELDS[path]: value for path, value in flat.items() if path in PATH_FIELDS}
            out[slug] = {"source": preset.source, "fields": fields}
        return out

    def groups(self) -> list[dict[str, Any]]:
        """The editor's parts for the template (``FORM_GROUPS``): ``{"heading", "folded", "summary",
        "open" (a folded part with an error opens), "set" (inputs not blank), "fieldsets":
        [(legend, [bound fields])]}``."""
        out = []
        for group in FORM_GROUPS:
            fieldsets = [(legend, [self[name] for name in names]) for legend, names in group.fieldsets]
            names = [name for _, names in group.fieldsets for name in names]
            out.append(
                {
                    "heading": group.heading,
                    "folded": group.folded,
                    "summary": group.summary,
                    "open": any(name in self.errors for name in names),
                    "set": sum(1 for name in names if self._is_set(name)),
                    "fieldsets": fieldsets,
                }
            )
        return out

    def _is_set(self, name: str) -> bool:
        value = self[name].value()
        spec = FIELD_SPECS[name]
        if spec.kind == "bool":
            return self.fields[name].to_python(value) != bool(spec.default)
        return value not in (None, "", [])

    def clean(self):
        data = super().clean()
        for name, field in FIELD_SPECS.items():
            if field.kind == "indices":
                data[name] = _indices(data.get(name) or "")
        for path in OPTIONAL_SECTIONS:
            section = next(s for s in FORM_SECTIONS if s.path == path)
            names = [PATH_FIELDS[f"{path}.{f.key}"] for f in section.fields if f.web]
            given = [n for n in names if data.get(n) not in (None, "")]
            if given:
                for f in section.fields:
                    name = PATH_FIELDS[f"{path}.{f.key}"]
                    if f.required and data.get(name) in (None, ""):
                        self.add_error(name, f"{section.label} needs {f.label.lower()} too")
        return data

    # --- to and from the scenario's JSON ----------------------------------------------------

    def job(self) -> dict[str, Any]:
        """The scenario file's ``job:`` mapping from the cleaned data (blank inputs omitted)."""
        return _nest(self._values(), "job.")

    def what_if(self) -> dict[str, Any]:
        """The ``what_if:`` mapping (blank inputs omitted: the design's values apply)."""
        return _nest(self._values(), "what_if.")

    def sections(self) -> dict[str, dict[str, Any]]:
        """Every section of a saved scenario (``scenario_file.SECTIONS``) from the cleaned data:
        ``{"job": ..., "what_if": ..., "failures": ..., "power": ...}``."""
        values = self._values()
        return {key: _nest(values, f"{key}.") for key in SECTIONS}

    def _values(self) -> dict[str, Any]:
        out = {}
        for name, field in FIELD_SPECS.items():
            value = self.cleaned_data.get(name)
            if field.kind == "bool":
                if value != field.default:
                    out[name] = bool(value)
                continue
            if value not in (None, "", []):
                out[name] = value
        return out

    @classmethod
    def initial_from(
        cls,
        *,
        name: str,
        job: dict[str, Any],
        what_if: dict[str, Any],
        description: str = "",
        **sections: dict[str, Any],
    ) -> dict[str, Any]:
        """Initial form values from a scenario's ``job``, ``what_if`` (and other sections') JSON."""
        flat = _flatten(
            {"job": job or {}, "what_if": what_if or {}, **{k: v or {} for k, v in sections.items()}}
        )
        initial: dict[str, Any] = {"name": name, "description": description}
        for field_name, path in FIELD_PATHS.items():
            spec = FIELD_SPECS[field_name]
            if path in flat:
                value = flat[path]
                if spec.kind == "indices":
                    value = ", ".join(str(v) for v in value)
                initial[field_name] = _input_number(value) if spec.kind == "float" else value
            elif spec.kind == "bool":
                initial[field_name] = spec.default
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


def _indices(text: str) -> list[int | str]:
    """A comma-separated list of node indices or names (names are resolved on the design)."""
    out: list[int | str] = []
    for item in (part.strip() for part in str(text).replace(";", ",").split(",")):
        if item:
            out.append(int(item) if item.isdigit() else item)
    return out


def _field_for_path(path: str) -> str | None:
    """The input of a scenario path (the longest known prefix: job.model.moe.top_k -> top_k)."""
    if path in ("name", "description"):
        return path
    path = PATH_ALIASES.get(path, path)
    parts = path.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in PATH_FIELDS:
            return PATH_FIELDS[candidate]
        candidate = PATH_ALIASES.get(candidate, candidate)
        if candidate in PATH_FIELDS:
            return PATH_FIELDS[candidate]
        parts.pop()
    return None


def _nest(values: dict[str, Any], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field_name, value in values.items():
        path = FIELD_PATHS[field_name]
        if not path.startswith(prefix):
            continue
        keys = path[len(prefix) :].split(".")
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
        from utilities.yamlsafe import MAX_BYTES

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


#: The bounded loader's limit: a bigger design file is refused unread.
MAX_DESIGN_FILE_BYTES = 1024 * 1024


class DesignImportForm(forms.Form):
    """A design file, uploaded or pasted, into one of the user's teams."""

    file = forms.FileField(required=False, help_text="a .yaml design file (at most 1 MiB)")
    text = forms.CharField(label="or paste it", required=False, widget=forms.Textarea(attrs={"rows": 12}))
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    name = forms.CharField(
        max_length=Design._meta.get_field("name").max_length,
        required=False,
        help_text="blank: the name in the file",
    )

    def __init__(self, *args, teams=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams if teams is not None else Team.objects.none()

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload is not None:
            if upload.size > MAX_DESIGN_FILE_BYTES:
                self.add_error(
                    "file", f"{upload.size:,} bytes, more than the {MAX_DESIGN_FILE_BYTES:,} allowed"
                )
            else:
                data["text"] = upload.read(MAX_DESIGN_FILE_BYTES + 1)
        if not data.get("text") and not self.errors:
            self.add_error("text", "choose a file or paste its text")
        return data
