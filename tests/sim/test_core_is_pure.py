"""The two pure cores (``scenarios.sim`` and ``topology.fabric``) and the pure helpers
(``utilities``) load without Django, Celery, Channels or plotly: every module of each, walked
from the packages, not listed by hand."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

WALK = textwrap.dedent(
    """
    import importlib, pkgutil, sys
    import scenarios.sim, topology.fabric, utilities
    names = []
    for package in (scenarios.sim, topology.fabric, utilities):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
            names.append(info.name)
    banned = ("django", "celery", "channels", "plotly", "rest_framework")
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in banned)
    print(len(names))
    print(",".join(loaded))
    """
)


@pytest.mark.slow
def test_every_module_of_both_pure_cores_imports_without_django():
    result = subprocess.run(
        [sys.executable, "-c", WALK], capture_output=True, text=True, check=True, timeout=120
    )
    walked, loaded = [*result.stdout.splitlines(), ""][:2]
    assert int(walked) >= 45, f"walked only {walked} modules"
    assert loaded == "", f"the pure cores imported: {loaded}"
