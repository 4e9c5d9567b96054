from __future__ import annotations

import subprocess
import sys
import textwrap


def test_core_is_pure_importing_sim_does_not_load_django():
    code = textwrap.dedent(
        """
        import sys
        import scenarios.sim
        import scenarios.sim.collectives, scenarios.sim.layout
        import scenarios.sim.network, scenarios.sim.stragglers, scenarios.sim.traffic
        banned = ("django", "celery", "channels", "plotly")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in banned)
        print(",".join(loaded))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "", f"the pure core imported: {result.stdout.strip()}"
