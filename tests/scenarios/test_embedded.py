"""Embedded mode (no Redis): the in-process worker thread really runs runs to completion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(180)
def test_embedded_worker_runs_step_and_split_sweep_to_completion(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}}
    env.update(TWIN_VAR_DIR=str(tmp_path), LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="twin.settings")
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "scenarios" / "embedded_run.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    step, sweep = report["runs"]
    assert step == {**step, "status": "succeeded", "progress": 1.0}, step
    assert sweep["status"] == "succeeded" and sweep["points"] == 3, sweep
    assert report["orphan"]["status"] == "failed" and "worker lost" in report["orphan"]["error"]


@pytest.mark.timeout(300)
def test_cancelled_run_frees_the_embedded_worker_at_once(tmp_path):
    """A long failures run cancelled mid-Monte Carlo stops computing: the next short run starts
    within about a second instead of waiting for the cancelled one to finish (tens of seconds)."""
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DATABASE_URL"}}
    env.update(TWIN_VAR_DIR=str(tmp_path), LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="twin.settings")
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "scenarios" / "embedded_cancel.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=290,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["long"]["status"] == "cancelled" and report["long"]["progress"] < 0.5, report
    assert report["short"]["status"] == "succeeded", report
    assert report["short_waited_s"] < 2.0, report
