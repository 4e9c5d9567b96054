"""Pure simulation core of Cluster Twin (numpy/scipy/networkx/yaml + topology.fabric only).

Public API::

    from scenarios.sim import load_scenario, predict, search_layouts
    result = predict(load_scenario("job.yaml"), catalog=load_catalog())
"""

from __future__ import annotations

from scenarios.sim.format.scenario import (
    CheckedScenario,
    ClusterSpec,
    JobSpec,
    ModelSpec,
    MoeSpec,
    ParallelSpec,
    Scenario,
    ScenarioError,
    WhatIf,
    check_scenario,
    checked_scenario,
    load_scenario,
    load_scenarios,
    parse_scenario,
)
from scenarios.sim.placement import JobPlacement, place_job, scenario_job_gpus
from scenarios.sim.search import SearchResult, search_layouts
from scenarios.sim.step.model import build_fabric, predict
from scenarios.sim.step.pipeline import PHASE_KINDS, PHASE_LABELS, StageTimeline
from scenarios.sim.step.result import BREAKDOWN_KEYS, MEMORY_KEYS, OVERLAP_KEYS, StepResult

__all__ = [
    "BREAKDOWN_KEYS",
    "MEMORY_KEYS",
    "OVERLAP_KEYS",
    "PHASE_KINDS",
    "PHASE_LABELS",
    "CheckedScenario",
    "ClusterSpec",
    "JobPlacement",
    "JobSpec",
    "ModelSpec",
    "MoeSpec",
    "ParallelSpec",
    "Scenario",
    "ScenarioError",
    "SearchResult",
    "StageTimeline",
    "StepResult",
    "WhatIf",
    "build_fabric",
    "check_scenario",
    "checked_scenario",
    "load_scenario",
    "load_scenarios",
    "parse_scenario",
    "place_job",
    "predict",
    "scenario_job_gpus",
    "search_layouts",
]
