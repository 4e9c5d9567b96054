"""Real fabrics for the network tests: the generators' rail-optimized designs, compiled."""

from __future__ import annotations

from functools import cache

from topology.fabric.compiled import compile_plan
from topology.fabric.generators import generate
from topology.fabric.specs import load_catalog


@cache
def catalog():
    return load_catalog()


@cache
def fabric(
    nodes: int,
    *,
    server: str = "dgx-a100",
    oversubscription: float = 1.0,
    su_nodes: int | None = None,
    generator: str = "rail-optimized",
):
    """Compiled fabric of ``nodes`` servers (cached: tests only read it)."""
    plan = generate(
        generator,
        catalog=catalog(),
        server=server,
        nodes=nodes,
        oversubscription=oversubscription,
        su_nodes=su_nodes,
    )
    return compile_plan(plan)
