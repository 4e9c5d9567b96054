"""Scenarios (a design + a job + what-if overrides) and their runs.

A ``Scenario`` stores the job and the what-if overrides as the JSON of the scenario file's
``job:`` and ``what_if:`` sections (``docs/scenario-format.md``); its cluster is the design it
points at. A ``Run`` is one computation of a scenario (a step-time prediction, a scaling sweep or
a layout search); its small results are ``summary`` JSON and its large per-link / per-rack /
per-GPU results are ``RunArray`` rows holding zlib-compressed numpy bytes (``storage.py``).
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse

from scenarios.choices import ACTIVE_STATUSES, FINAL_STATUSES, ChunkState, RunStatus
from scenarios.sim.format.schema import MAX_NAME_LENGTH


def default_dict():
    return {}


def default_list():
    return []


class Scenario(models.Model):
    """A what-if question about one design: a training job plus overrides.

    ``job``, ``what_if``, ``failures`` and ``power`` are the scenario file's sections of those
    names (``docs/scenario-format.md``); the cluster is the design's. ``what_if.slow_nodes`` may
    list node names (``node00012``) besides indices.
    """

    name = models.CharField(max_length=MAX_NAME_LENGTH)
    description = models.TextField(blank=True)
    design = models.ForeignKey("topology.Design", on_delete=models.CASCADE, related_name="scenarios")
    job = models.JSONField(default=default_dict)
    what_if = models.JSONField(default=default_dict, blank=True)
    failures = models.JSONField(default=default_dict, blank=True, help_text="the file's failures: section")
    power = models.JSONField(default=default_dict, blank=True, help_text="the file's power: section")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="scenarios"
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-updated", "-pk")

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("scenarios:scenario-detail", args=[self.pk])


class RunQuerySet(models.QuerySet):
    def active(self) -> RunQuerySet:
        """Queued or running runs."""
        return self.filter(status__in=ACTIVE_STATUSES)


class Run(models.Model):
    """One computation of a scenario, its life cycle and its results.

    ``progress`` is 0..1 and ``stage`` a short label of what the worker is doing; ``heartbeat``
    is refreshed by the worker while it runs (the reaper fails runs whose heartbeat stopped);
    ``options`` are the kind's parameters (e.g. the node counts of a sweep).
    """

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="runs")
    kind = models.CharField(
        max_length=32, default="step", help_text="a registered run kind (scenarios.kinds)"
    )
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    progress = models.FloatField(default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    stage = models.CharField(max_length=200, blank=True)
    options = models.JSONField(default=default_dict, blank=True)
    summary = models.JSONField(default=default_dict, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    design_version = models.PositiveIntegerField(default=0, help_text="design version the run simulated")
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="times a worker started computing it (a lost worker's run is queued again)"
    )
    inputs = models.JSONField(
        default=default_dict,
        blank=True,
        help_text="what it simulated: the scenario document, the design version and the catalog rows "
        "(snapshot + digest), scenarios.provenance.RunInputs; {} for runs before provenance was kept",
    )

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ("-created", "-pk")
        indexes = [models.Index(fields=("status", "heartbeat"), name="run_status_heartbeat")]

    def __str__(self) -> str:
        # The kind's label is the registry's (scenarios.selectors.run_kind_label): a model does
        # not import the kind registry, so it names its kind as stored, like its status.
        return f"{self.scenario_name} #{self.pk} ({self.kind}, {self.status})"

    def get_absolute_url(self) -> str:
        return reverse("scenarios:run-detail", args=[self.pk])

    @property
    def scenario_name(self) -> str:
        """The scenario's name as the run simulated it (its inputs), today's for a run from
        before provenance was kept: renaming the scenario does not relabel its runs."""
        document = (self.inputs or {}).get("scenario") or {}
        return document.get("name") or self.scenario.name

    @property
    def design_changed_since(self) -> bool:
        """Whether the design moved past the version this run simulated."""
        return self.design_version != self.scenario.design.version

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def duration_s(self) -> float | None:
        """Wall time from start to finish (s), or None before it finished."""
        if self.started and self.finished:
            return (self.finished - self.started).total_seconds()
        return None


class RunChunk(models.Model):
    """One chunk task of a split run: its input, its state, the heartbeat its worker refreshes
    while computing it (the lease the reaper judges), and its JSON result.

    The merge reads the results once every chunk is done, so a chunk that arrives late is merged
    and one delivered twice counts once (``index`` is unique per run).
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    spec = models.JSONField(default=default_dict, help_text="the kind's chunk input")
    state = models.CharField(max_length=16, choices=ChunkState.choices, default=ChunkState.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    heartbeat = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ("run", "index")
        constraints = [models.UniqueConstraint(fields=("run", "index"), name="unique_run_chunk_index")]
        indexes = [models.Index(fields=("state", "heartbeat"), name="run_chunk_state_heartbeat")]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.index} ({self.state})"


class RunArray(models.Model):
    """A large result array of a run (per link, per rack, per GPU...) as compressed numpy bytes.

    ``data`` is ``zlib.compress(array.tobytes())`` of a C-ordered array of ``dtype`` and
    ``shape``; read it with ``scenarios.storage.array_from_row``.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="arrays")
    name = models.CharField(max_length=64)
    dtype = models.CharField(max_length=16)
    shape = models.JSONField(default=default_list)
    data = models.BinaryField()

    class Meta:
        ordering = ("run", "name")
        constraints = [models.UniqueConstraint(fields=("run", "name"), name="unique_run_array_name")]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.name} {self.dtype}{tuple(self.shape)}"

    @property
    def size_bytes(self) -> int:
        return len(self.data)
