"""The floor-plan benchmark still measures the real run page (it renders the template, so a
change to the page that breaks its scripts shows up here, not only when someone runs the bench)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.conftest import ROOT, installed_chromium

pytestmark = pytest.mark.e2e


def test_floor_plan_bench_runs_on_the_real_page():
    installed_chromium()
    out = subprocess.run(
        [sys.executable, "bench/floor_plan.py", "--nodes", "64", "--updates", "5", "--loads", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "targets (first paint < 1000 ms, update script < 50 ms): met" in out.stdout
