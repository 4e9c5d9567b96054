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
    assert "overlap (s):" in out and "tp exposed" in out and "hidden" in out
    assert "headroom" in out


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
    # Blocking sends (overlap_pp false), so each op's send shows as pp_wait.
    data = scenario_dict(parallel={"tp": 8, "pp": 2, "dp": 2}, global_batch=16, nodes=4, overlap_pp=False)
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


def test_simulate_failures_and_power_add_their_sections(catalog_db, scenario_file, capsys):
    data = {**scenario_dict(), "failures": {"trials": 400, "window_days": 10}, "power": {"window_s": 3}}
    call_command("simulate", scenario_file(data), "--failures", "--trials", "300", "--power", "--json")
    payload = json.loads(capsys.readouterr().out)
    failures = payload["failures"]
    for key in ("etr", "optimal_checkpoint_interval_min", "badput", "closed_form_etr"):
        assert key in failures, key
    assert set(failures["wall_time_days"]) >= {"p5", "p50", "p95"}
    assert failures["trials"] == 300 and "by_category" in failures["interruptions"]
    assert failures["interruptions"]["total"] >= 0 and 0 < failures["etr"] <= 1
    power = payload["power"]
    for key in (
        "facility_trough_mw",
        "max_ramp_mw_per_s",
        "band_energy_share",
        "feeds_over_limit",
        "racks_over_budget",
    ):
        assert key in power, key
    assert power["facility_peak_mw"] >= power["facility_trough_mw"] and power["swing_mw"] >= 0
    assert power["coarse"]["resolution_s"] > 0  # the failure trial's life drove the coarse timeline


@pytest.mark.parametrize(
    ("args", "data", "message"),
    [
        (["--failures", "--trials", "0"], {}, "failures.trials: must be ≥ 1 (got 0)"),
        (["--failures", "--trials", "200000"], {}, "failures.trials: must be ≤ 100,000 (got 200,000)"),
        (
            ["--failures"],
            {"failures": {"checkpoint": {"interval_min": 0}}},
            "failures.checkpoint.interval_min: must be > 0",
        ),
        (
            ["--failures"],
            {"failures": {"rates": {"software_per_day": -1}}},
            "failures.rates.software_per_day: must be ≥ 0",
        ),
        (
            ["--failures"],
            {"failures": {"spare_servers": 99}},
            "failures.spare_servers: must be ≤ the cluster's 4 servers",
        ),
        (
            ["--power"],
            {"power": {"window_s": 700, "resolution_ms": 1}},
            "power.window_s: window_s x 1000 / resolution_ms",
        ),
        (["--power"], {"power": {"gpu": {"floor_fraction": 1.5}}}, "power.gpu.floor_fraction: must be ≤ 1"),
        (["--power"], {"power": {"gpu": {"cap_w": -3}}}, "power.gpu.cap_w: must be > 0"),
    ],
)
def test_simulate_bad_failure_and_power_input_is_one_line_naming_the_field(
    catalog_db, scenario_file, args, data, message
):
    with pytest.raises(CommandError) as caught:
        call_command("simulate", scenario_file({**scenario_dict(), **data}), *args)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "database_url, reason",
    [
        ("sqlite:///{tmp}/never-migrated.sqlite3", "no such table"),
        (
            "postgres://postgres@127.0.0.1:5432/twin_never_created",
            'database "twin_never_created" does not exist',
        ),
    ],
    ids=["sqlite-not-migrated", "postgres-missing-database"],
)
@pytest.mark.slow
def test_simulate_on_a_database_without_a_catalog_says_how_to_set_it_up(tmp_path, database_url, reason):
    """A newcomer who runs simulate before `make run`: one line naming the cause and the fix."""
    import os
    import subprocess
    import sys

    from tests.scenarios.integration import ROOT

    if database_url.startswith("postgres") and not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("needs the PostgreSQL server the suite runs on")
    env = {**os.environ, "DATABASE_URL": database_url.format(tmp=tmp_path)}
    done = subprocess.run(
        [sys.executable, "manage.py", "simulate", "docs/examples/gpt-1.3b-32gpu.yaml"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("CommandError: database: cannot read the hardware catalog (")
    assert reason in lines[0] and "`make run`" in lines[0]


def _too_big():
    model = {"layers": 80, "hidden": 8192, "heads": 64}
    return scenario_dict(cluster={"nodes": 2}, parallel={"dp": 2}, global_batch=32, model=model)


def test_simulate_json_of_a_job_that_does_not_fit_says_infeasible_and_exits_3(
    catalog_db, scenario_file, capsys
):
    with pytest.raises(CommandError, match=r"^infeasible: gpt-small: memory: ") as raised:
        call_command("simulate", scenario_file(_too_big()), "--json")
    assert raised.value.returncode == 3
    payload = json.loads(capsys.readouterr().out)
    assert payload["feasible"] is False
    (reason,) = payload["infeasible"]
    assert reason.startswith("memory: ") and "GiB per GPU needed, 80 GiB on a100" in reason
    assert payload["would_fit"]["memory_gib_per_gpu"] <= 80


def test_simulate_json_of_a_feasible_job_says_feasible(catalog_db, scenario_file, capsys):
    call_command("simulate", scenario_file(scenario_dict()), "--json")
    payload = json.loads(capsys.readouterr().out)
    assert payload["feasible"] is True and payload["infeasible"] == []


def test_simulate_exit_status_of_an_infeasible_job_is_3(catalog_db, scenario_file, capsys, monkeypatch):
    """From the command line (``run_from_argv``, what manage.py calls): status 3, the reasons
    and the layout that would fit on stdout, one line on stderr."""
    from django.db import connections

    from scenarios.management.commands.simulate import Command

    monkeypatch.setattr(connections, "close_all", lambda: None)  # keep the test database open
    with pytest.raises(SystemExit) as exited:
        Command().run_from_argv(["manage.py", "simulate", scenario_file(_too_big()), "--skip-checks"])
    assert exited.value.code == 3
    captured = capsys.readouterr()
    assert "INFEASIBLE" in captured.out and "infeasible: memory: " in captured.out
    assert "would fit: tp" in captured.out
    assert captured.err.strip().startswith("CommandError: infeasible: gpt-small: memory: ")
    assert len(captured.err.strip().splitlines()) == 1


def test_simulate_search_where_no_layout_fits_exits_3(catalog_db, scenario_file, capsys):
    model = {"layers": 128, "hidden": 20480, "heads": 160}
    data = scenario_dict(cluster={"nodes": 1}, parallel={"dp": 1}, global_batch=8, model=model)
    with pytest.raises(CommandError, match=r"^infeasible: gpt-small: no layout fits") as raised:
        call_command("simulate", scenario_file(data), "--search", "--json")
    assert raised.value.returncode == 3
    payload = json.loads(capsys.readouterr().out)
    assert payload["feasible"] is False and payload["best"] == []
