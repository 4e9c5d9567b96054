"""What-if scenarios and simulation runs (Django app). ``scenarios.sim`` is the pure core."""
