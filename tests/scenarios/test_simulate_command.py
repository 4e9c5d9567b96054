from __future__ import annotations

import json

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.sim._scenarios import scenario_dict


@pytest.fixture
def scenario_file(tmp_path):
    def write(data):
        path = tmp_path / "job.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return str(path)

    return write


def test_simulate_prints_a_readable_table(catalog_db, scenario_file, capsys):
    call_command("simulate", scenario_file(scenario_dict()))
    out = capsys.readouterr().out
    assert "gpt-small: 32 GPUs" in out
    assert "step time" in out and "breakdown (s):" in out and "MFU" in out


def test_simulate_json_has_the_step_result_fields(catalog_db, scenario_file, capsys):
    call_command("simulate", scenario_file(scenario_dict()), "--json")
    payload = json.loads(capsys.readouterr().out)
    for key in (
        "step_time_s",
        "model_tflops_per_gpu",
        "hardware_tflops_per_gpu",
        "mfu",
        "tokens_per_s",
        "memory_gib_per_gpu",
        "fits",
        "memory",
        "breakdown",
        "time_to_train_days",
        "timeline",
    ):
        assert key in payload
    assert payload["step_time_s"] > 0
    assert "link_utilization" not in payload
    stages = payload["timeline"]["stages"]
    assert [(stage["stage"], stage["gpus"]) for stage in stages] == [(0, 32)]
    phases = stages[0]["phases"]
    assert set(phases[0]) == {"kind", "start_s", "duration_s"}
    assert [p["kind"] for p in phases[:3]] == ["forward", "comm", "backward"]  # pp 1: no send, no bubble
    assert sum(p["duration_s"] for p in phases) == pytest.approx(payload["step_time_s"], rel=1e-6)


def test_simulate_json_timeline_has_one_entry_per_pipeline_stage(catalog_db, scenario_file, capsys):
    data = scenario_dict(parallel={"tp": 8, "pp": 2, "dp": 2}, global_batch=16, nodes=4)
    call_command("simulate", scenario_file(data), "--json")
    stages = json.loads(capsys.readouterr().out)["timeline"]["stages"]
    assert [(stage["stage"], stage["gpus"]) for stage in stages] == [(0, 16), (1, 16)]
    assert stages[1]["phases"][0]["kind"] == "bubble"  # the last stage waits for the fill
    assert {p["kind"] for p in stages[0]["phases"]} >= {"forward", "backward", "pp_wait", "bubble"}


def test_simulate_search_lists_top_layouts(catalog_db, scenario_file, capsys):
    data = scenario_dict(cluster={"nodes": 1}, parallel={"dp": 1}, global_batch=16)
    call_command("simulate", scenario_file(data), "--search", "--top", "3", "--json")
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["best"]) == 3
    assert payload["valid"] + sum(payload["rejected"].values()) == payload["candidates"]


def test_simulate_bad_scenario_is_one_line_command_error(catalog_db, scenario_file):
    with pytest.raises(CommandError, match=r"^job.parallel.tp: must divide heads \(16\)"):
        call_command("simulate", scenario_file(scenario_dict(parallel={"tp": 3})))


def test_simulate_unknown_server_is_command_error(catalog_db, scenario_file):
    data = scenario_dict(cluster={"server": "nope"})
    with pytest.raises(CommandError, match=r"cluster\.server: unknown slug 'nope'"):
        call_command("simulate", scenario_file(data))


def test_simulate_missing_file_is_command_error(catalog_db, tmp_path):
    with pytest.raises(CommandError, match="file: cannot read"):
        call_command("simulate", str(tmp_path / "missing.yaml"))
