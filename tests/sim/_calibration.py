"""The one rule for tests that need the shared calibration set (it lives beside the repository,
``scenarios.sim.calibration.fitted_dir``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def need_calibration(path: Path) -> None:
    """Skip when ``path`` is missing, with the reason; fail instead when the set was asked for
    (``CI`` or ``TWIN_CALIBRATION_DIR`` set), so a configured run never passes without it."""
    if path.exists():
        return
    message = f"no calibration data at {path} (set TWIN_CALIBRATION_DIR)"
    if os.environ.get("CI") or os.environ.get("TWIN_CALIBRATION_DIR"):
        pytest.fail(message)
    pytest.skip(message)
