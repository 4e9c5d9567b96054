"""Hardware catalog and cluster designs.

Catalog rows mirror the pure specs in ``topology.fabric.specs`` field for field; a design is a
hall of racks holding nodes (servers), GPUs, switches, links and power feeds. Rules about one
row or its close relatives live in ``clean()``; rules across a whole design (switch ports within
radix, feeds carrying every rack) live in ``services.design_validate``.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse

from teams.models import Team
from topology.choices import (
    BuildKind,
    BuildStatus,
    ChangeAction,
    FeedSide,
    Generator,
    LinkTier,
    RackKind,
    SwitchRole,
    SwitchTier,
)
from topology.fabric.specs import (
    ANNUAL_FAILURE_RATE_RANGE,
    efficiency_problems,
    feed_capacity_kw,
    server_nameplate_w,
)

positive = MinValueValidator(0)
fraction = [MinValueValidator(0), MaxValueValidator(1)]


def default_dict():
    return {}


class CatalogModel(models.Model):
    """Common fields of every catalog entry: a stable slug, a name and per-field sources."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=128)
    sources = models.JSONField(default=default_dict, blank=True, help_text="field → datasheet or paper")

    class Meta:
        abstract = True
        ordering = ("slug",)

    def __str__(self) -> str:
        return self.name

    def clean(self):
        # Rule: a failure rate is per unit-year, from 0 to ANNUAL_FAILURE_RATE_RANGE's top.
        low, high = ANNUAL_FAILURE_RATE_RANGE
        errors = {}
        for model_field in self._meta.concrete_fields:
            value = getattr(self, model_field.attname)
            if model_field.name.endswith("annual_failure_rate") and value is not None:
                if not low <= value <= high:
                    errors[model_field.name] = (
                        f"{model_field.name}: must be from {low:g} to {high:g} failures per unit-year "
                        f"(got {value:g}; a percentage is a fraction here: 5 % is 0.05)"
                    )
        if errors:
            raise ValidationError(errors)


class GpuType(CatalogModel):
    """An accelerator model: dense peak throughput, HBM, power and scale-up bandwidth."""

    vendor = models.CharField(max_length=64)
    peak_tflops_fp8 = models.FloatField("FP8 TFLOP/s (dense)", validators=[positive])
    peak_tflops_bf16 = models.FloatField("BF16/FP16 TFLOP/s (dense)", validators=[positive])
    peak_tflops_tf32 = models.FloatField("TF32 TFLOP/s (dense)", validators=[positive])
    hbm_gib = models.FloatField("HBM GiB", validators=[MinValueValidator(1)])
    hbm_tbps = models.FloatField("HBM TB/s", validators=[MinValueValidator(0.01)])
    tdp_w = models.FloatField("TDP W", validators=[MinValueValidator(1)])
    idle_w = models.FloatField("idle W", validators=[positive])
    scaleup_gbytes_per_s = models.FloatField("scale-up GB/s per direction", validators=[positive])
    annual_failure_rate = models.FloatField(validators=[positive], help_text="per GPU-year, HBM excluded")
    hbm_annual_failure_rate = models.FloatField(
        "HBM annual failure rate", validators=[positive], help_text="per GPU-year"
    )
    efficiency = models.JSONField(
        default=default_dict, blank=True, help_text="calibrated step-time efficiency constants"
    )

    class Meta(CatalogModel.Meta):
        verbose_name = "GPU type"

    def clean(self):
        super().clean()
        # Idle draw above TDP is a data-entry error that would invert every power swing.
        if self.idle_w is not None and self.tdp_w is not None and self.idle_w >= self.tdp_w:
            raise ValidationError({"idle_w": f"must be below the TDP ({self.tdp_w:g} W)"})
        # Rule: efficiency sets only the step-time model's constants, each within its range
        # (an unknown key used to be ignored silently: a typo left the default in force).
        problems = efficiency_problems(self.efficiency)
        if problems:
            raise ValidationError(
                {"efficiency": [f"efficiency.{key}: {message}" for key, message in problems.items()]}
            )


class ServerType(CatalogModel):
    """A server or compute-tray model: its GPUs, NICs, power and size."""

    gpu_type = models.ForeignKey(GpuType, on_delete=models.PROTECT, related_name="server_types")
    gpus_per_server = models.PositiveSmallIntegerField(validators=[MinValueValidator(1)])
    scaleup_domain_gpus = models.PositiveIntegerField(
        "scale-up domain GPUs", validators=[MinValueValidator(1)]
    )
    nics_per_server = models.PositiveSmallIntegerField(validators=[MinValueValidator(1)])
    nic_gbps = models.FloatField("NIC Gb/s", validators=[MinValueValidator(1)])
    base_power_w = models.FloatField("CPU/base power W", validators=[positive])
    rack_units = models.PositiveSmallIntegerField(validators=[MinValueValidator(1)])
    servers_per_rack = models.PositiveSmallIntegerField(validators=[MinValueValidator(1)])
    annual_failure_rate = models.FloatField(
        validators=[positive], help_text="per server-year: host faults (CPU, DRAM, SSD, board, chassis)"
    )
    nic_annual_failure_rate = models.FloatField(
        "NIC annual failure rate", validators=[positive], help_text="per scale-out NIC-year"
    )
    psu_annual_failure_rate = models.FloatField(
        "PSU annual failure rate", validators=[positive], help_text="per server-year"
    )

    class Meta(CatalogModel.Meta):
        verbose_name = "server type"

    @property
    def power_w(self) -> float:
        """Nameplate power (``topology.fabric.specs.server_nameplate_w``)."""
        return server_nameplate_w(
            base_power_w=self.base_power_w, gpus_per_server=self.gpus_per_server, tdp_w=self.gpu_type.tdp_w
        )

    def clean(self):
        super().clean()
        # A scale-up domain is made of whole servers (8 per HGX, 18 trays per NVL72).
        if self.gpus_per_server and self.scaleup_domain_gpus:
            if self.scaleup_domain_gpus % self.gpus_per_server:
                raise ValidationError(
                    {"scaleup_domain_gpus": f"must be a multiple of gpus_per_server ({self.gpus_per_server})"}
                )


class SwitchType(CatalogModel):
    """A switch model (InfiniBand/Ethernet scale-out or NVLink scale-up)."""

    roles = models.JSONField(default=list, help_text="tiers it may serve: leaf, spine, core, scaleup")
    radix = models.PositiveIntegerField(validators=[MinValueValidator(2)])
    port_gbps = models.FloatField("port Gb/s", validators=[MinValueValidator(1)])
    latency_ns = models.FloatField(validators=[positive])
    power_w = models.FloatField(validators=[positive])
    rack_units = models.PositiveSmallIntegerField(default=1)
    annual_failure_rate = models.FloatField(validators=[positive])

    class Meta(CatalogModel.Meta):
        verbose_name = "switch type"

    def clean(self):
        super().clean()
        if not isinstance(self.roles, list) or not self.roles:
            raise ValidationError({"roles": "must list at least one of leaf, spine, core, scaleup"})
        bad = set(self.roles) - set(SwitchRole.values)
        if bad:
            raise ValidationError({"roles": f"unknown role(s) {', '.join(sorted(bad))}"})


class LinkType(CatalogModel):
    """A cable or optic type."""

    gbps = models.FloatField("Gb/s", validators=[MinValueValidator(1)])
    latency_ns = models.FloatField(validators=[positive])
    power_w = models.FloatField(validators=[positive])
    annual_failure_rate = models.FloatField(validators=[positive])

    class Meta(CatalogModel.Meta):
        verbose_name = "link/optic type"


class PowerFeedType(CatalogModel):
    """A branch-circuit type from a panel to a rack PDU."""

    volts = models.FloatField(validators=[MinValueValidator(1)])
    amps = models.FloatField(validators=[MinValueValidator(1)])
    phases = models.PositiveSmallIntegerField(choices=[(1, "single"), (3, "three")])
    power_factor = models.FloatField(validators=fraction)
    derating = models.FloatField(
        validators=fraction, help_text="continuous-load fraction (0.8 under NEC 210.19)"
    )
    annual_failure_rate = models.FloatField(validators=[positive], help_text="per feed-year")

    class Meta(CatalogModel.Meta):
        verbose_name = "power-feed type"

    @property
    def capacity_kw(self) -> float:
        """Derated continuous real power (``topology.fabric.specs.feed_capacity_kw``)."""
        return float(feed_capacity_kw(self.volts, self.amps, self.phases, self.power_factor, self.derating))


#: Catalog kind (the YAML key, ``topology.fabric.specs.SPEC_TYPES``) -> its model: the one table
#: the loader, the import, the admin and the API read.
CATALOG_MODELS: dict[str, type[CatalogModel]] = {
    "gpus": GpuType,
    "servers": ServerType,
    "switches": SwitchType,
    "links": LinkType,
    "feeds": PowerFeedType,
}


# --- Designs ------------------------------------------------------------------------------


class Design(models.Model):
    """A cluster design: one or more halls with racks, servers, network and power."""

    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="designs"
    )
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="designs")
    generator = models.CharField(max_length=32, choices=Generator.choices, default=Generator.MANUAL)
    parameters = models.JSONField(default=default_dict, blank=True)
    summary = models.JSONField(
        default=default_dict, blank=True, help_text="totals computed when the design was built"
    )
    version = models.PositiveIntegerField(default=1, help_text="bumped on every structural change")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name", "pk")
        constraints = [models.UniqueConstraint(fields=("team", "name"), name="unique_design_name_per_team")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("topology:design-detail", args=[self.pk])


class Hall(models.Model):
    """A data hall: a floor grid of tiles on which racks stand."""

    design = models.ForeignKey(Design, on_delete=models.CASCADE, related_name="halls")
    name = models.CharField(max_length=64)
    rows = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(1000)])
    columns = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(1000)])

    class Meta:
        ordering = ("design", "name")
        constraints = [models.UniqueConstraint(fields=("design", "name"), name="unique_hall_name")]

    def __str__(self) -> str:
        return f"{self.design} / {self.name}"


class Rack(models.Model):
    """A rack on one tile of a hall, with its U height and power budget."""

    hall = models.ForeignKey(Hall, on_delete=models.CASCADE, related_name="racks")
    name = models.CharField(max_length=32)
    row = models.PositiveIntegerField()
    column = models.PositiveIntegerField()
    kind = models.PositiveSmallIntegerField(choices=RackKind.choices, default=RackKind.COMPUTE)
    u_height = models.PositiveSmallIntegerField(
        default=48, validators=[MinValueValidator(1), MaxValueValidator(60)]
    )
    power_budget_kw = models.FloatField(validators=[MinValueValidator(0)])

    class Meta:
        ordering = ("hall", "row", "column")
        constraints = [
            # Rule: one rack per floor tile.
            models.UniqueConstraint(fields=("hall", "row", "column"), name="unique_rack_position"),
            models.UniqueConstraint(fields=("hall", "name"), name="unique_rack_name"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        # Rule: a rack stands inside its hall's grid.
        if self.hall_id and self.row is not None and self.column is not None:
            if self.row >= self.hall.rows or self.column >= self.hall.columns:
                raise ValidationError(
                    {
                        "row": f"position ({self.row}, {self.column}) is outside the hall grid "
                        f"of {self.hall.rows} rows × {self.hall.columns} columns"
                    }
                )
        # Rule: a rack draws power; a budget of 0 kW (or less) is a typo, not a design.
        if self.power_budget_kw is not None and self.power_budget_kw <= 0:
            raise ValidationError(
                {"power_budget_kw": f"power_budget_kw: must be above 0 kW (got {self.power_budget_kw:g})"}
            )
        if self.pk:
            shortfalls = self.feed_shortfalls()
            if shortfalls:
                raise ValidationError({"power_budget_kw": [f"power_budget_kw: {m}" for m in shortfalls]})

    def feed_capacity_kw_by_side(self) -> dict[int, float]:
        """Derated capacity of the rack's feeds on each side, A and B (0 kW on a side without feeds)."""
        totals = {side.value: 0.0 for side in FeedSide}
        for feed in self.feeds.all():
            totals[feed.side] += feed.feed_type.capacity_kw
        return totals

    def feed_shortfalls(self, budget_kw: float | None = None) -> list[str]:
        """Rule (2N): each side, A and B, alone carries the rack's whole budget, so that either
        side survives the other's loss. One message per short side (the one wording every check
        uses: the rack form, the feed form and ``design_validate``); ``budget_kw`` tests another
        budget than the saved one."""
        budget_kw = self.power_budget_kw if budget_kw is None else budget_kw
        return [
            f"budget {budget_kw:g} kW exceeds the side {FeedSide(side).label} feeds' derated "
            f"capacity ({kw:.1f} kW); 2N: each side alone carries the whole budget"
            for side, kw in self.feed_capacity_kw_by_side().items()
            if kw + 1e-9 < budget_kw
        ]


class Node(models.Model):
    """A server (or compute tray) mounted in a rack."""

    rack = models.ForeignKey(Rack, on_delete=models.CASCADE, related_name="nodes")
    server_type = models.ForeignKey(ServerType, on_delete=models.PROTECT, related_name="nodes")
    name = models.CharField(max_length=32)
    u_position = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(1)], help_text="lowest U it occupies (1-based)"
    )

    class Meta:
        ordering = ("rack", "u_position")
        constraints = [models.UniqueConstraint(fields=("rack", "u_position"), name="unique_node_position")]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        if not (self.rack_id and self.server_type_id and self.u_position):
            return
        top_u = self.u_position + self.server_type.rack_units - 1
        # Rule: a node fits inside its rack's units.
        if top_u > self.rack.u_height:
            raise ValidationError(
                {
                    "u_position": f"U{self.u_position}–U{top_u} does not fit the "
                    f"{self.rack.u_height}U rack {self.rack}"
                }
            )
        # Rule: a node does not overlap another node or a switch in the same rack.
        for other_bottom, other_top, label in self.rack_occupancy():
            if self.u_position <= other_top and other_bottom <= top_u:
                raise ValidationError(
                    {
                        "u_position": f"U{self.u_position}–U{top_u} overlaps {label} at "
                        f"U{other_bottom}–U{other_top}"
                    }
                )

    def rack_occupancy(self):
        """(bottom U, top U, label) of every other device in the rack."""
        others = self.rack.nodes.exclude(pk=self.pk).select_related("server_type")
        for node in others:
            yield node.u_position, node.u_position + node.server_type.rack_units - 1, node.name
        for switch in self.rack.switches.select_related("switch_type"):
            yield switch.u_position, switch.u_position + switch.switch_type.rack_units - 1, switch.name


class Gpu(models.Model):
    """One GPU of a node (one row per GPU, so failures and slow GPUs can point at it)."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()

    class Meta:
        verbose_name = "GPU"
        ordering = ("node", "index")
        constraints = [models.UniqueConstraint(fields=("node", "index"), name="unique_gpu_index")]

    def __str__(self) -> str:
        return f"{self.node.name}/gpu{self.index}"

    def clean(self):
        # Rule: a GPU index exists on its server type.
        if self.node_id and self.index is not None:
            count = self.node.server_type.gpus_per_server
            if self.index >= count:
                raise ValidationError({"index": f"must be below {count} for {self.node.server_type}"})


class Switch(models.Model):
    """A switch in a design: its type, tier and place."""

    design = models.ForeignKey(Design, on_delete=models.CASCADE, related_name="switches")
    switch_type = models.ForeignKey(SwitchType, on_delete=models.PROTECT, related_name="switches")
    name = models.CharField(max_length=48)
    tier = models.PositiveSmallIntegerField(choices=SwitchTier.choices)
    rack = models.ForeignKey(Rack, on_delete=models.CASCADE, related_name="switches")
    u_position = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    ports = models.PositiveIntegerField(
        default=0, help_text="usable ports at the fabric's link speed (radix × breakout); 0 = radix"
    )
    group = models.IntegerField(default=-1, help_text="scalable unit (leaf) or pod (spine)")
    rail = models.IntegerField(default=-1)

    class Meta:
        verbose_name_plural = "switches"
        ordering = ("design", "tier", "pk")
        constraints = [models.UniqueConstraint(fields=("design", "name"), name="unique_switch_name")]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        # Rule: a switch serves only a tier its catalog type allows.
        if self.switch_type_id and self.tier is not None:
            role = SwitchRole.values[self.tier]
            if role not in self.switch_type.roles:
                raise ValidationError(
                    {
                        "tier": f"{self.switch_type} cannot serve as {role} "
                        f"(roles: {', '.join(self.switch_type.roles)})"
                    }
                )
        # Rule: breakout splits a port into at most port_gbps / 100 Gb/s lanes groups.
        if self.switch_type_id and self.ports:
            most = self.switch_type.radix * max(1, int(self.switch_type.port_gbps // 100))
            if self.ports > most:
                raise ValidationError({"ports": f"must be at most {most} for {self.switch_type}"})
        # Rule: a switch fits inside its rack's units.
        if self.rack_id and self.switch_type_id and self.u_position:
            top_u = self.u_position + self.switch_type.rack_units - 1
            if top_u > self.rack.u_height:
                raise ValidationError(
                    {
                        "u_position": f"U{self.u_position}–U{top_u} does not fit the "
                        f"{self.rack.u_height}U rack {self.rack}"
                    }
                )


class Link(models.Model):
    """A cable between a node's NIC port (or a lower switch) and a higher-tier switch."""

    design = models.ForeignKey(Design, on_delete=models.CASCADE, related_name="links")
    link_type = models.ForeignKey(LinkType, on_delete=models.PROTECT, related_name="links")
    tier = models.PositiveSmallIntegerField(choices=LinkTier.choices)
    gbps = models.FloatField("Gb/s", validators=[MinValueValidator(1)])
    node = models.ForeignKey(Node, null=True, blank=True, on_delete=models.CASCADE, related_name="links")
    nic_index = models.PositiveSmallIntegerField(null=True, blank=True)
    lower_switch = models.ForeignKey(
        Switch, null=True, blank=True, on_delete=models.CASCADE, related_name="uplinks"
    )
    upper_switch = models.ForeignKey(Switch, on_delete=models.CASCADE, related_name="downlinks")

    class Meta:
        ordering = ("design", "tier", "pk")
        constraints = [
            # Rule: a link's lower end is exactly one of a NIC port or a switch.
            models.CheckConstraint(
                condition=(
                    Q(node__isnull=False, nic_index__isnull=False, lower_switch__isnull=True)
                    | Q(node__isnull=True, nic_index__isnull=True, lower_switch__isnull=False)
                ),
                name="link_lower_end_is_nic_or_switch",
            ),
        ]

    def __str__(self) -> str:
        lower = f"{self.node}/nic{self.nic_index}" if self.node_id else str(self.lower_switch)
        return f"{lower} → {self.upper_switch}"

    def clean(self):
        errors = {}
        if self.upper_switch_id:
            upper = self.upper_switch
            # Rule: a link runs no faster than the ports at its ends.
            if self.gbps and self.gbps > upper.switch_type.port_gbps:
                errors["gbps"] = (
                    f"{self.gbps:g} Gb/s exceeds {upper}'s port speed ({upper.switch_type.port_gbps:g} Gb/s)"
                )
            if self.link_type_id and self.gbps and self.gbps > self.link_type.gbps:
                errors["link_type"] = f"{self.link_type} carries at most {self.link_type.gbps:g} Gb/s"
            # Rule: links climb exactly one tier (NIC → leaf, leaf → spine, spine → core).
            if self.node_id:
                if upper.tier != SwitchTier.LEAF:
                    errors["upper_switch"] = "a NIC port connects to a leaf switch"
                server = self.node.server_type
                if self.nic_index is not None and self.nic_index >= server.nics_per_server:
                    errors["nic_index"] = f"must be below {server.nics_per_server} for {server}"
                if self.gbps and self.gbps > server.nic_gbps:
                    errors["gbps"] = f"{self.gbps:g} Gb/s exceeds the NIC speed ({server.nic_gbps:g} Gb/s)"
            elif self.lower_switch_id and upper.tier != self.lower_switch.tier + 1:
                errors["upper_switch"] = (
                    f"a {self.lower_switch.get_tier_display().lower()} switch "
                    f"connects up to the next tier, not to "
                    f"{upper.get_tier_display().lower()}"
                )
        if errors:
            raise ValidationError(errors)


class PowerFeed(models.Model):
    """A branch circuit from a panel (side A or B) to the racks it serves."""

    design = models.ForeignKey(Design, on_delete=models.CASCADE, related_name="feeds")
    feed_type = models.ForeignKey(PowerFeedType, on_delete=models.PROTECT, related_name="feeds")
    name = models.CharField(max_length=48)
    side = models.PositiveSmallIntegerField(choices=FeedSide.choices)
    panel = models.CharField(max_length=48)
    racks = models.ManyToManyField(Rack, related_name="feeds")

    class Meta:
        ordering = ("design", "panel", "name")
        constraints = [models.UniqueConstraint(fields=("design", "name"), name="unique_feed_name")]

    def __str__(self) -> str:
        return self.name


# --- History and background builds ----------------------------------------------------------


class DesignChange(models.Model):
    """One entry of a design's history: who changed what, when, and the version it made.

    Written only by the design-change service (``services.design_changed``) and the services
    that create designs; ``changes`` is the readable diff, ``[{field, label, before, after}]``.
    """

    design = models.ForeignKey(Design, on_delete=models.CASCADE, related_name="changes")
    version = models.PositiveIntegerField(help_text="the design version this change made")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    user_name = models.CharField(max_length=150, blank=True, help_text="kept if the user is deleted")
    time = models.DateTimeField(auto_now_add=True)
    action = models.CharField(max_length=16, choices=ChangeAction.choices)
    object_kind = models.CharField(max_length=32, help_text="design, rack, power feed, ...")
    object_name = models.CharField(max_length=200, blank=True)
    summary = models.CharField(max_length=500)
    changes = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ("-version", "-pk")
        indexes = [models.Index(fields=("design", "version"), name="design_change_version")]

    def __str__(self) -> str:
        return f"{self.design_id} v{self.version}: {self.summary}"


class DesignBuild(models.Model):
    """A design being saved in the background (from a generator, or as a fork), so that a
    16,384-GPU save shows a progress bar instead of a hung page. Live progress is on the
    progress board (``topology.progress``) under ``task_id``."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="builds")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    kind = models.CharField(max_length=16, choices=BuildKind.choices)
    name = models.CharField(max_length=Design._meta.get_field("name").max_length)
    description = models.TextField(blank=True)
    generator = models.CharField(max_length=32, blank=True)
    parameters = models.JSONField(default=default_dict, blank=True)
    source = models.ForeignKey(Design, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    status = models.CharField(max_length=16, choices=BuildStatus.choices, default=BuildStatus.QUEUED)
    error = models.TextField(blank=True)
    design = models.ForeignKey(Design, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    task_id = models.CharField(max_length=64)
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created", "-pk")

    def __str__(self) -> str:
        return f"{self.name} ({self.get_status_display()})"

    def get_absolute_url(self) -> str:
        return reverse("topology:build-detail", args=[self.pk])
