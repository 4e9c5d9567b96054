"""An infeasible job is not an answer: the step core says why it cannot run and the search
finds the nearest layout that does."""

from __future__ import annotations

import re

from scenarios.sim import parse_scenario, predict
from scenarios.sim.search import fitting_layout
from scenarios.sim.step.model import scenario_gpu
from tests.sim._fabrics import fabric
from tests.sim._scenarios import scenario_dict

BIG = {"layers": 80, "hidden": 8192, "heads": 64}


def _big():
    data = scenario_dict(cluster={"nodes": 2}, parallel={"dp": 2}, global_batch=32, model=BIG)
    return parse_scenario(data)


def test_predict_infeasible_names_memory_needed_and_hbm(catalog):
    scenario = _big()
    result = predict(scenario, catalog=catalog, fabric=fabric(2))
    gpu = scenario_gpu(scenario, catalog)
    assert not result.fits and not result.feasible
    (reason,) = result.infeasible
    match = re.fullmatch(r"memory: ([\d,.]+) GiB per GPU needed, ([\d.]+) GiB on (\S+)", reason)
    assert match, reason
    assert float(match[1].replace(",", "")) == round(result.memory_gib_per_gpu)
    assert float(match[2]) == gpu.hbm_gib and match[3] == gpu.slug
    summary = result.summary()
    assert summary["feasible"] is False and summary["infeasible"] == [reason]


def test_predict_feasible_job_has_no_reason(catalog):
    scenario = parse_scenario(scenario_dict(cluster={"nodes": 2}, parallel={"dp": 2}, global_batch=32))
    result = predict(scenario, catalog=catalog, fabric=fabric(2))
    assert result.feasible and result.infeasible == ()
    assert result.summary()["feasible"] is True and result.summary()["infeasible"] == []


def test_fitting_layout_of_infeasible_job_fits(catalog):
    import dataclasses

    from scenarios.sim import ParallelSpec

    scenario = _big()
    row = fitting_layout(scenario, catalog=catalog, fabric=fabric(2))
    assert row is not None and row["memory_gib_per_gpu"] <= scenario_gpu(scenario, catalog).hbm_gib
    parallel = ParallelSpec(**{k: row[k] for k in ("tp", "pp", "dp", "cp", "ep", "vpp")})
    job = dataclasses.replace(
        scenario.job,
        parallel=parallel,
        micro_batch=row["micro_batch"],
        recompute=row["recompute"],
        zero=row["zero"],
    )
    assert predict(dataclasses.replace(scenario, job=job), catalog=catalog, fabric=fabric(2)).feasible
