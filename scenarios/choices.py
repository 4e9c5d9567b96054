"""Choices shared by the models, forms and templates of the scenarios app."""

from __future__ import annotations

from django.db import models


class RunKind(models.TextChoices):
    """What a run computes. Each kind has an executor in ``scenarios.kinds.RUN_KINDS``;
    later issues (failures, power) add a member here and an entry there."""

    STEP = "step", "Step time"
    SWEEP = "sweep", "Scaling sweep"
    SEARCH = "search", "Layout search"


class RunStatus(models.TextChoices):
    """Life cycle of a run: queued -> running -> succeeded | failed | cancelled."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


#: Statuses of a run that may still change (the worker owns it).
ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)
#: Statuses after which nothing changes any more.
FINAL_STATUSES = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)
