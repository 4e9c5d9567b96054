"""Hardware catalog and cluster designs (Django app). ``topology.fabric`` is its pure core."""
