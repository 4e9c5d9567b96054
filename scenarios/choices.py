"""Choices shared by the models, forms and templates of the scenarios app."""

from __future__ import annotations

from django.db import models


class RunStatus(models.TextChoices):
    """Life cycle of a run: queued -> running -> succeeded | infeasible | failed | cancelled.

    ``infeasible``: the computation finished and found that the job cannot run as asked (it
    does not fit in HBM, no layout fits); its reasons are ``summary["infeasible"]`` and it has
    no headline figures.
    """

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    INFEASIBLE = "infeasible", "Infeasible"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class ChunkState(models.TextChoices):
    """Life cycle of one chunk task of a split run: queued -> running -> done (a chunk whose
    worker was lost goes back to queued)."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"


#: Statuses of a run that may still change (the worker owns it).
ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)
#: Statuses after which nothing changes any more.
FINAL_STATUSES = (RunStatus.SUCCEEDED, RunStatus.INFEASIBLE, RunStatus.FAILED, RunStatus.CANCELLED)
