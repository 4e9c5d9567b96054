"""Forms of the design pages. They convert text to typed values; the rules (generator limits,
budgets within feeds, unique names, versions) are the services', shown through
``teams.forms.add_service_errors`` next to the field they name."""

from __future__ import annotations

from typing import Any

from django import forms

from teams.models import Team
from topology.choices import Generator
from topology.fabric.generators import GENERATORS
from topology.models import Design, PowerFeedType, ServerType, SwitchType
from topology.services import GENERATOR_PARAMS

#: A design name's input is as long as its column (the rule itself: ``services.design_name_check``).
DESIGN_NAME_LENGTH = Design._meta.get_field("name").max_length

AUTOMATIC = ("", "automatic")


class VersionedForm(forms.Form):
    """A form that edits a design carries the version it was opened at (optimistic concurrency)."""

    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1, max_value=2**31 - 1)


class GeneratorForm(forms.Form):
    """The parameters of ``manage.py design generate`` (the preview binds only these)."""

    generator = forms.ChoiceField(
        choices=[(g, Generator(g).label) for g in GENERATORS], initial="rail-optimized"
    )
    server = forms.ChoiceField(label="Server type")
    nodes = forms.IntegerField(label="Servers", help_text="NVL72: compute trays, a multiple of 18")
    oversubscription = forms.FloatField(
        required=False, initial=1.0, help_text="leaf down:up bandwidth (1 = non-blocking)"
    )
    nic_gbps = forms.FloatField(label="NIC speed (Gb/s)", required=False, help_text="blank: the server's")
    su_nodes = forms.IntegerField(
        label="Servers per scalable unit", required=False, help_text="blank: automatic"
    )
    switch = forms.ChoiceField(label="Scale-out switch", required=False)
    tiers = forms.TypedChoiceField(
        label="Switch tiers",
        required=False,
        coerce=int,
        empty_value=None,
        choices=[AUTOMATIC, (2, "2 (leaf–spine)"), (3, "3 (leaf–spine–core)")],
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        servers = ServerType.objects.select_related("gpu_type").order_by("slug")
        self.fields["server"].choices = [(s.slug, f"{s.name} ({s.gpus_per_server} GPUs)") for s in servers]
        switches = [s for s in SwitchType.objects.order_by("slug") if "leaf" in (s.roles or [])]
        self.fields["switch"].choices = [AUTOMATIC] + [
            (s.slug, f"{s.name} ({s.radix} × {s.port_gbps:g} Gb/s)") for s in switches
        ]
        if not self.is_bound:
            self.initial.setdefault(
                "server", "dgx-h100" if any(s.slug == "dgx-h100" for s in servers) else None
            )
            self.initial.setdefault("nodes", 128)

    def params(self) -> dict[str, Any]:
        """The generator parameters typed in (blank ones left out: the generator's defaults)."""
        data = self.cleaned_data
        return {k: data[k] for k in GENERATOR_PARAMS if data.get(k) not in (None, "")}


class DesignNewForm(GeneratorForm):
    name = forms.CharField(max_length=DESIGN_NAME_LENGTH)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)

    def __init__(self, *args, teams=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams if teams is not None else Team.objects.none()


class DesignEditForm(VersionedForm):
    name = forms.CharField(max_length=DESIGN_NAME_LENGTH)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)


class RackEditForm(VersionedForm):
    name = forms.CharField(max_length=32)
    power_budget_kw = forms.FloatField(label="Power budget (kW)")


#: The panel select's explicit choice to start a panel (a typed name never makes one by accident).
NEW_PANEL = "__new__"


class FeedEditForm(VersionedForm):
    """A feed's name, circuit type and panel, chosen among the design's panels (or a new one,
    explicitly: the "New panel…" option and its name)."""

    name = forms.CharField(max_length=48)
    panel = forms.ChoiceField(help_text="the design's panels")
    new_panel = forms.CharField(
        label="New panel name", max_length=48, required=False, help_text="the new panel's name"
    )
    feed_type = forms.ModelChoiceField(label="Circuit type", queryset=PowerFeedType.objects.order_by("slug"))

    def __init__(self, *args, panels=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.rebind_kwargs = {"panels": panels}
        self.fields["panel"].choices = [(p, p) for p in panels] + [(NEW_PANEL, "New panel…")]
        self.fields["feed_type"].label_from_instance = lambda t: f"{t.name} ({t.capacity_kw:.1f} kW derated)"

    def clean(self):
        data = super().clean()
        data["create_panel"] = data.get("panel") == NEW_PANEL
        if data["create_panel"]:
            name = (data.get("new_panel") or "").strip()
            if not name:
                self.add_error("new_panel", "name the new panel (or choose one of the design's panels)")
            elif name.casefold() in {p.casefold() for p in self.rebind_kwargs["panels"]}:
                self.add_error("new_panel", f"panel {name} exists already: choose it in the list")
            data["panel"] = name
        return data


class ForkForm(forms.Form):
    team = forms.ModelChoiceField(label="Into team", queryset=Team.objects.none(), empty_label=None)
    name = forms.CharField(max_length=DESIGN_NAME_LENGTH)

    def __init__(self, *args, teams=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams if teams is not None else Team.objects.none()
