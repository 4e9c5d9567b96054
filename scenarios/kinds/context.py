"""Everything a kind needs to compute one run: the run, its design, the validated core scenario,
the catalog, the run's options, and the fabric the scenario runs on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from scenarios.provenance import RunInputs
from scenarios.scenario_file import document_checked, saved_scenario_checked, what_if_changes_cluster

T = TypeVar("T")


@dataclass
class RunContext:
    """The inputs of one run (or one chunk of it).

    ``checked`` is the core ``scenarios.sim.CheckedScenario``: the run's scenario validated
    against ``catalog`` once, when the context was loaded; kinds hand it to the core, which then
    does not validate it again. Both come from the run's stored inputs (``scenarios.provenance``:
    the document as it ran and its catalog snapshot) when it has them, else from the saved
    scenario and today's catalog. ``own_catalog`` says the catalog is the snapshot, not today's
    (the saved design's plan is then built with it too). ``design`` is loaded fresh, so its
    ``version`` is the one this computation sees. ``memo`` holds what a kind derives from these
    inputs and reuses (the plan, the fabric, a failure study): a context cached for a run's
    chunks (``services.execution``) computes each once per worker process.
    """

    run: Any
    design: Any
    checked: Any
    catalog: Any
    options: dict[str, Any]
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)
    own_catalog: bool = False

    @classmethod
    def load(cls, run, *, design=None, catalog=None) -> RunContext:
        """Validate the run's scenario (its stored document, else the saved scenario) against its
        catalog (the run's snapshot, else ``catalog`` or today's; a ValidationError if it
        broke), on its design (loaded fresh unless given)."""
        from topology.models import Design
        from topology.selectors import catalog_load

        today = catalog_load() if catalog is None else catalog
        scenario = run.scenario
        scenario.design = design = Design.objects.get(pk=scenario.design_id) if design is None else design
        inputs = RunInputs.of(run)
        if inputs is None:
            checked, catalog = saved_scenario_checked(scenario, catalog=today), today
        else:
            catalog = inputs.core_catalog(today)
            checked = document_checked(inputs.scenario, catalog=catalog)
        return cls(
            run=run,
            design=design,
            checked=checked,
            catalog=catalog,
            options=dict(run.options or {}),
            own_catalog=catalog is not today,
        )

    @property
    def scenario(self):
        """The core ``Scenario`` (validated: ``checked.scenario``)."""
        return self.checked.scenario

    def with_options(self, **options) -> RunContext:
        """This context with other options (and its own, empty memo: memoized values may depend
        on the options)."""
        return replace(self, options={**self.options, **options}, memo={})

    def memoized(self, key, compute: Callable[[], T]) -> T:
        """``compute()`` once per context and ``key`` (not thread-safe: at worst computed twice)."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    @property
    def changes_cluster(self) -> bool:
        """Whether the what-if asks for a cluster other than the saved design."""
        return what_if_changes_cluster(self.scenario, self.design)

    @property
    def n_racks(self) -> int:
        from topology.selectors import design_rack_power

        return int(design_rack_power(self.design).rack_pk.size)

    def plan(self):
        """The ``FabricPlan`` the scenario runs on: the saved design's, or the cluster the what-if
        describes (generated like the design)."""
        return self.memoized("plan", self._plan)

    def _plan(self):
        from scenarios.sim.step.model import cluster_plan
        from topology.selectors import design_plan

        if self.changes_cluster:
            return cluster_plan(self.scenario.effective_cluster(), self.catalog)
        return design_plan(design=self.design, catalog=self.catalog if self.own_catalog else None)

    def fabric(self):
        """The compiled fabric of the scenario: the saved design's (compiled once per design
        version) when the what-if keeps the cluster, else the cluster the what-if describes;
        with the what-if's degraded spine applied."""
        return self.memoized("fabric", self._fabric)

    def _fabric(self):
        from scenarios.sim.step.model import build_fabric
        from scenarios.sim.step.network import fabric_with_tier_capacity_scale
        from topology.selectors import design_fabric

        if self.changes_cluster:  # scenario_check refused this on a hand-built design
            return build_fabric(self.scenario, self.catalog)
        fabric = design_fabric(design=self.design, catalog=self.catalog if self.own_catalog else None)
        scale = self.scenario.what_if.spine_capacity_scale
        if scale < 1.0:
            fabric = fabric_with_tier_capacity_scale(fabric, scale)
        return fabric
