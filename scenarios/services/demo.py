"""The demo scenarios a newcomer opens after `make run`: on the demo designs, with one finished
run of every kind, computed at seed time with small sizes so the first pages already show
answers (``manage.py demo_seed``; the designs are ``topology.services.demo_seed``'s)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from scenarios.choices import ACTIVE_STATUSES
from scenarios.models import Run, Scenario
from scenarios.services.execution import run_execute
from scenarios.services.runs import run_start
from scenarios.services.scenarios import scenario_create

#: A scenario saved within this long of its creation was never edited by a person.
UNEDITED_WITHIN = timedelta(seconds=2)
#: How long the seed waits for a run another worker claimed first (Redis mode).
CLAIMED_WAIT_S = 120.0


@dataclass(frozen=True)
class DemoScenario:
    """One demo scenario: its design (by name), its sections and the runs it gets, in order
    (the power run replays the failures run before it)."""

    design: str
    name: str
    description: str
    runs: tuple[tuple[str, dict[str, Any]], ...]
    failures: dict[str, Any] = field(default_factory=dict)
    power: dict[str, Any] = field(default_factory=dict)


#: Small sizes: the whole seed computes in a few seconds on one core.
DEMO_SCENARIOS = (
    DemoScenario(
        design="H100 rail-optimized 2:1 (256 nodes)",
        name="Llama-2-7B-shaped baseline",
        description="Seeded by manage.py demo_seed: one finished run of every kind.",
        runs=(
            ("step", {}),
            ("search", {"chunks": 1, "top": 5}),
            ("sweep", {"nodes": [64, 128, 256], "chunk_size": 3}),
            ("failures", {"chunks": 1}),
            ("power", {}),
        ),
        failures={"trials": 200},
        power={"window_s": 10},
    ),
    DemoScenario(
        design="Selene-like A100 SuperPOD (384 nodes)",
        name="Llama-2-7B-shaped baseline",
        description="Seeded by manage.py demo_seed.",
        runs=(("step", {}),),
    ),
    DemoScenario(
        design="GB200 NVL72 x8",
        name="Llama-2-7B-shaped baseline",
        description="Seeded by manage.py demo_seed.",
        runs=(("step", {}),),
    ),
)


def demo_runs_seed(*, team, user) -> list[Run]:
    """Create the demo scenarios of ``team``'s demo designs and compute their runs now.

    Idempotent: a scenario that exists is never written (a user's edits stay), and runs are
    added only to a scenario the seed made and no one edited since, for the kinds it has no
    run of yet (a re-seed never duplicates a run). Returns the runs computed by this call.
    """
    from scenarios.forms import default_job

    computed = []
    for spec in DEMO_SCENARIOS:
        design = team.designs.filter(name=spec.design).first()
        if design is None:
            continue
        scenario = Scenario.objects.filter(design=design, name=spec.name).first()
        if scenario is None:
            summary = design.summary or {}
            scenario = scenario_create(
                design=design,
                name=spec.name,
                description=spec.description,
                job=default_job(gpus=int(summary.get("gpus") or 8), gpus_per_server=_gpus_per_server(design)),
                failures=spec.failures or None,
                power=spec.power or None,
                user=user,
            )
        elif scenario.updated - scenario.created > UNEDITED_WITHIN:
            continue
        for kind, options in spec.runs:
            if not scenario.runs.filter(kind=kind).exists():
                computed.append(_compute(scenario, kind, options, user))
    return computed


def _gpus_per_server(design) -> int:
    node = design.halls.values_list("racks__nodes__server_type__gpus_per_server", flat=True).first()
    return int(node or 8)


def _compute(scenario: Scenario, kind: str, options: dict[str, Any], user) -> Run:
    """Start a run the ordinary way and compute it in this process (a worker that picked up its
    message first computes it instead: wait for it)."""
    run = run_start(scenario=scenario, kind=kind, user=user, options=options)
    if run_execute(run_id=run.pk) == "skipped":
        deadline = time.monotonic() + CLAIMED_WAIT_S
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.status not in ACTIVE_STATUSES:
                break
            time.sleep(0.5)
    run.refresh_from_db()
    return run
