"""The shape of the house, checked on the code itself: who may import whom, the one permission
module, consumers that only read, services without Celery, modules of a readable size, no paths
of one machine in the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The Django middle (the pure cores have their own test: tests/sim/test_core_is_pure.py).
MIDDLE = ("scenarios", "topology", "twin")
PURE = ("scenarios/sim", "topology/fabric")


def _middle_files() -> list[Path]:
    files = []
    for package in MIDDLE:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" in relative or any(relative.startswith(p + "/") for p in PURE):
                continue
            files.append(path)
    return files


def _module(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _imports(path: Path) -> set[str]:
    """Every first-party module a file imports, also inside functions (a lazy import is a
    dependency all the same)."""
    out = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def _all_files() -> list[Path]:
    return [
        p for package in MIDDLE for p in (ROOT / package).rglob("*.py") if "/migrations/" not in p.as_posix()
    ]


def _runtime_nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:`` (annotations only, never imported)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def test_no_module_import_circle_in_the_middle_or_the_pure_cores():
    """A package's ``__init__`` re-exporting its own modules is not a circle; any other is."""
    modules = {_module(p): p for p in _all_files()}
    graph = nx.DiGraph()
    for name, path in modules.items():
        for target in _imports(path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # a package's __init__ re-exporting its own modules is not a cycle
            if target and target != name and not name.startswith(target + "."):
                graph.add_edge(name, target)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


#: Ways of deciding who may see what that belong in twin/permissions.py only.
VISIBILITY_PATTERNS = re.compile(
    r"visible_to|team__members|user\.teams|\.memberships|TeamMembership\.objects\.filter\(user|is_superuser"
)


def test_visibility_is_decided_only_by_the_permission_module():
    offenders = []
    for path in _middle_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative == "twin/permissions.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if VISIBILITY_PATTERNS.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_every_view_consumer_and_service_reaching_an_object_goes_through_the_permission_module():
    """A module that loads team-owned rows on behalf of a user must import restrict/require."""
    doors = [
        "scenarios/views.py",
        "scenarios/consumers.py",
        "scenarios/services/scenarios.py",
        "scenarios/services/runs.py",
        "scenarios/manage_views.py",
        "scenarios/services/designs.py",
        "topology/views/doors.py",
        "topology/views/designs.py",
        "topology/views/generate.py",
        "topology/views/racks.py",
        "topology/services/building.py",
        "topology/services/builds.py",
        "topology/services/editing.py",
        "topology/services/teams.py",
        "topology/admin.py",
        "twin/views.py",
        "twin/teams.py",
        "twin/api/base.py",
        "scenarios/api/views.py",
        "scenarios/api/designs.py",
        "topology/api/views.py",
    ]
    for relative in doors:
        text = (ROOT / relative).read_text(encoding="utf-8")
        assert "twin.permissions" in text, f"{relative} does not use twin.permissions"


def test_consumers_only_read():
    text = (ROOT / "scenarios/consumers.py").read_text(encoding="utf-8")
    assert "services" not in text
    for write in (".save(", ".update(", ".create(", ".delete(", "bulk_"):
        assert write not in text, f"consumers.py writes ({write})"


def test_services_reach_celery_only_through_the_queue_module():
    for path in (ROOT / "scenarios/services").glob("*.py"):
        celery = [m for m in _imports(path) if m == "celery" or m.startswith(("celery.", "twin.celery"))]
        assert not celery and "scenarios.tasks" not in _imports(path), path.name
    assert "send_task" in (ROOT / "scenarios/queue.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("package", ["scenarios", "topology", "twin"])
def test_modules_stay_readable(package):
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in (ROOT / package).rglob("*.py")
        if "/migrations/" not in p.as_posix() and (n := len(p.read_text(encoding="utf-8").splitlines())) > 650
    ]
    assert not long, long


def test_no_path_of_one_machine_in_the_code():
    offenders = []
    for folder in ("scenarios", "topology", "twin", "bench", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if re.search(r"""["'](/work|/home|/root)/""", text):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders
