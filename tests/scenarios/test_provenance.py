"""A run keeps its inputs (the scenario document as it ran, the design version, the catalog rows
it used): editing the scenario or the catalog afterwards changes nothing about it, and a re-run
"as it ran" computes the same answer from them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from scenarios.models import Run
from scenarios.provenance import RunInputs, digest_of
from scenarios.selectors import run_provenance
from scenarios.services import run_execute, run_start, scenario_update
from scenarios.services.runs import run_rerun
from topology.models import GpuType
from topology.services.catalog import catalog_changed


def edit_gpu_bf16(tflops: float) -> None:
    """A catalog edit as the admin saves it: the row, then every design using it moves on."""
    from django.db import transaction

    with transaction.atomic():
        GpuType.objects.filter(slug="h100-sxm").update(peak_tflops_bf16=tflops)
        catalog_changed(GpuType.objects.get(slug="h100-sxm"))


def finished(run) -> Run:
    assert run_execute(run_id=run.pk) == "succeeded", Run.objects.get(pk=run.pk).error
    return Run.objects.get(pk=run.pk)


def test_run_start_records_the_document_design_version_and_catalog_rows(scenario, user):
    run = run_start(scenario=scenario, kind="step", user=user)
    inputs = RunInputs.of(run)
    assert inputs.scenario["name"] == "baseline" and inputs.scenario["job"]["parallel"]["tp"] == 8
    assert inputs.scenario["cluster"]["server"] == "dgx-h100"
    assert inputs.design_version == scenario.design.version
    assert [g["slug"] for g in inputs.catalog["gpus"]] == ["h100-sxm"]  # only the rows it uses
    assert [s["slug"] for s in inputs.catalog["servers"]] == ["dgx-h100"]
    gpu = inputs.catalog["gpus"][0]
    assert gpu["peak_tflops_bf16"] == 989.0 and "sources" not in gpu
    assert inputs.catalog_digest == digest_of(inputs.catalog) and len(inputs.catalog_digest) == 64


def test_run_start_writes_the_model_preset_out(scenario, user, job):
    scenario_update(scenario=scenario, user=user, job={**job, "model": {"preset": "llama3-8b"}})
    run = run_start(scenario=scenario, kind="step", user=user)
    model = RunInputs.of(run).scenario["job"]["model"]
    assert model["preset"] == "llama3-8b" and model["layers"] == 32 and model["hidden"] == 4096


def test_a_finished_run_keeps_its_name_and_inputs_after_the_scenario_is_renamed(scenario, user):
    run = finished(run_start(scenario=scenario, kind="step", user=user))
    scenario_update(scenario=scenario, user=user, name="renamed later")
    run = Run.objects.get(pk=run.pk)
    assert run.scenario_name == "baseline" and str(run).startswith("baseline #")
    provenance = run_provenance(run=run)
    assert [(c.path, c.before, c.after) for c in provenance.scenario_changes] == [
        ("name", "baseline", "renamed later")
    ]


def test_rerun_as_it_ran_ignores_a_catalog_edit_and_an_ordinary_run_sees_it(scenario, user):
    first = finished(run_start(scenario=scenario, kind="step", user=user))
    edit_gpu_bf16(500.0)
    first.refresh_from_db()
    provenance = run_provenance(run=first)
    assert provenance.catalog_changed and provenance.design.changed and not provenance.design.structural
    again = finished(run_rerun(run=first, user=user))
    today = finished(run_start(scenario=scenario, kind="step", user=user))
    assert again.summary["step_time_s"] == first.summary["step_time_s"]
    assert today.summary["step_time_s"] > first.summary["step_time_s"] * 1.2
    assert RunInputs.of(again).catalog_digest == RunInputs.of(first).catalog_digest
    assert RunInputs.of(again).rerun_of == first.pk
    assert RunInputs.of(today).catalog_digest != RunInputs.of(first).catalog_digest
    assert RunInputs.of(today).catalog["gpus"][0]["peak_tflops_bf16"] == 500.0


def test_rerun_refuses_a_run_without_inputs_and_a_design_changed_by_hand(scenario, user):
    legacy = Run.objects.create(scenario=scenario, kind="step", status="succeeded")
    with pytest.raises(ValidationError) as error:
        run_rerun(run=legacy, user=user)
    assert "not recorded" in error.value.message_dict["inputs"][0]
    assert run_provenance(run=legacy).recorded is False
    run = finished(run_start(scenario=scenario, kind="step", user=user))
    from topology.models import Rack
    from topology.services import rack_update

    rack = Rack.objects.filter(hall__design=scenario.design).order_by("pk").first()
    rack_update(rack=rack, user=user, expected_version=scenario.design.version, power_budget_kw=50.0)
    with pytest.raises(ValidationError) as error:
        run_rerun(run=Run.objects.get(pk=run.pk), user=user)
    assert list(error.value.message_dict) == ["design"] and "with today's inputs" in error.value.messages[0]


def test_a_run_queued_before_provenance_records_its_inputs_when_it_computes(scenario, user):
    run = run_start(scenario=scenario, kind="step", user=user)
    Run.objects.filter(pk=run.pk).update(inputs={})
    run = finished(run)
    assert RunInputs.of(run).scenario["name"] == "baseline"


def test_the_document_writes_out_defaults_and_the_frameworks_choices(scenario, user, job):
    from scenarios.scenario_file import scenario_to_dict
    from scenarios.sim.format.scenario import parse_scenario

    scenario_update(scenario=scenario, user=user, job={**job, "precision": "fp16"}, failures={"trials": 10})
    document = RunInputs.of(run_start(scenario=scenario, kind="step", user=user)).scenario
    # fp16 means the Megatron-LM 2022 stack: its overlaps and kernels, as the core resolved them.
    assert document["job"]["framework"] == "megatron-2022" and document["job"]["attention"] == "standard"
    assert document["job"]["overlap_dp"] is False and document["job"]["parallel"]["vpp"] == 1
    assert document["what_if"]["straggler_spread"] == 0.01 and document["failures"]["repair_hours"] == 48.0
    assert parse_scenario(document) == parse_scenario(scenario_to_dict(scenario=scenario))


def test_rerun_after_a_design_rename_runs_as_it_ran(scenario, user):
    from topology.services import design_update

    run = finished(run_start(scenario=scenario, kind="step", user=user))
    design = scenario.design
    design_update(design=design, user=user, expected_version=design.version, name="Renamed design")
    provenance = run_provenance(run=Run.objects.get(pk=run.pk))
    assert provenance.design.changed and provenance.design.descriptive and not provenance.design.structural
    again = finished(run_rerun(run=Run.objects.get(pk=run.pk), user=user))
    assert again.summary["step_time_s"] == run.summary["step_time_s"]
