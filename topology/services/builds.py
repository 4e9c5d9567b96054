"""Background builds of designs (from a generator, or a fork): checked and queued by the web
request, saved by a worker, with live progress on the progress board so that the page shows a
16,384-GPU save as a moving bar instead of hanging."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from teams.models import Team
from teams.permissions import CHANGE, VIEW, require
from topology import queue
from topology.choices import BuildKind, BuildStatus
from topology.models import Design, DesignBuild
from topology.progress import progress_clear, progress_publish
from topology.services.building import design_generate, design_name_check, generator_plan
from topology.services.editing import design_fork
from utilities.jsonsafe import json_safe

logger = logging.getLogger(__name__)


@transaction.atomic
def design_build_start(
    *,
    team: Team,
    user,
    name: str,
    kind: str = BuildKind.GENERATE,
    generator: str = "",
    params: Mapping[str, Any] | None = None,
    source: Design | None = None,
    description: str = "",
) -> DesignBuild:
    """Check a design build (from a generator, or a fork of ``source``) and queue it; the worker
    saves it (``design_build_execute``) while the page shows its progress.

    Raises
    ------
    NotFound, Forbidden, ValidationError: as ``design_generate`` / ``design_fork`` would.
    """
    require(team, user, CHANGE)
    name = design_name_check(team=team, name=name)
    if kind == BuildKind.GENERATE:
        generator_plan(generator=generator, params=params or {})  # fast: refuse bad input now
    elif kind == BuildKind.FORK:
        if source is None:
            raise ValidationError({"source": "source: the design to fork is required"})
        require(source, user, VIEW)
    else:
        raise ValidationError({"kind": f"kind: must be one of {', '.join(BuildKind.values)} (got {kind!r})"})
    build = DesignBuild.objects.create(
        team=team,
        user=user,
        kind=kind,
        name=name,
        description=description,
        generator=generator,
        parameters=json_safe(dict(params or {})),
        source=source,
        task_id=str(uuid.uuid4()),
    )
    transaction.on_commit(lambda: queue.enqueue_build(build.pk, build.task_id))
    return build


class _Throttled:
    """Publishes a build's progress at most every ``interval_s`` (and always the first time)."""

    def __init__(self, key: str, interval_s: float = 0.2):
        self.key, self.interval_s, self.last = key, interval_s, 0.0

    def __call__(self, fraction: float, stage: str) -> None:
        now = time.monotonic()
        if now - self.last >= self.interval_s:
            self.last = now
            progress_publish(self.key, progress=fraction, stage=f"saving {stage}")


def design_build_execute(*, build_id: int) -> str:
    """Save a queued build (what the Celery task calls); returns "succeeded", "failed" or "skipped".

    The build's row is updated outside the saving transaction (the page reads it); live
    progress goes through the progress board because the saving transaction hides its rows.
    """
    started = DesignBuild.objects.filter(pk=build_id, status=BuildStatus.QUEUED).update(
        status=BuildStatus.RUNNING
    )
    if not started:
        return "skipped"
    build = DesignBuild.objects.select_related("team", "user", "source").get(pk=build_id)
    on_progress = _Throttled(build.task_id)
    on_progress(0.0, "")
    try:
        if build.kind == BuildKind.FORK:
            if build.source is None:
                raise ValidationError("source: the design to fork was deleted meanwhile")
            design = design_fork(
                design=build.source,
                team=build.team,
                user=build.user,
                name=build.name,
                on_progress=on_progress,
            )
        else:
            design = design_generate(
                generator=build.generator,
                params=build.parameters,
                name=build.name,
                team=build.team,
                user=build.user,
                description=build.description,
                on_progress=on_progress,
            )
    except Exception as exc:
        if not isinstance(exc, ValidationError | Http404 | PermissionDenied):
            logger.exception("design build %s failed", build_id)
        message = (
            "; ".join(exc.messages) if isinstance(exc, ValidationError) else (str(exc) or type(exc).__name__)
        )
        DesignBuild.objects.filter(pk=build_id).update(
            status=BuildStatus.FAILED, error=message[:4000], finished=timezone.now()
        )
        progress_clear(build.task_id)
        return "failed"
    DesignBuild.objects.filter(pk=build_id).update(
        status=BuildStatus.SUCCEEDED, design=design, finished=timezone.now()
    )
    progress_clear(build.task_id)
    return "succeeded"


def design_builds_fail_orphaned() -> int:
    """Embedded mode at start-up: the in-memory queue is new, so unfinished builds are orphaned."""
    return DesignBuild.objects.filter(status__in=(BuildStatus.QUEUED, BuildStatus.RUNNING)).update(
        status=BuildStatus.FAILED,
        error="the server restarted before this design was saved; nothing was saved, start it again",
        finished=timezone.now(),
    )
