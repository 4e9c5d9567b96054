"""The shape of the house, checked on the code itself: who may import whom (the apps over the
bottom ``teams`` app, ``twin`` as glue only, models without the kind registry), the one
permission module, consumers that only read, services without Celery, modules of a readable
size, no paths of one machine in the code."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The Django middle (the pure cores have their own test: tests/sim/test_core_is_pure.py).
MIDDLE = ("scenarios", "topology", "teams", "twin")
PURE = ("scenarios/sim", "topology/fabric")
#: The Django apps (``twin`` is the project glue, ``utilities`` the pure helpers).
APPS = ("scenarios", "topology", "teams")
#: The API framework base: modules of ``twin`` the apps may import (they import no app).
TWIN_FRAMEWORK = (
    "twin.api.errors",
    "twin.api.pagination",
    "twin.api.parsers",
    "twin.api.schema",
    "twin.api.filters",
    "twin.api.base",
)
#: The glue: the only modules of ``twin`` that import apps (to mount their URLs and routes).
TWIN_GLUE = ("twin/urls.py", "twin/routing.py", "twin/api/urls.py")


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


@functools.cache
def _imports(path: Path) -> frozenset[str]:
    """Every first-party module a file imports, also inside functions (a lazy import is a
    dependency all the same); parsed once per session, for every test that asks."""
    out = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(out)


def _all_files() -> list[Path]:
    return _code_files(*MIDDLE, "utilities")


def _code_files(*packages: str) -> list[Path]:
    """Every module of the packages, the pure cores included, migrations excepted."""
    paths = (p for package in packages for p in (ROOT / package).rglob("*.py"))
    return [p for p in paths if "/migrations/" not in p.as_posix()]


def _top(module: str) -> str:
    return module.split(".")[0]


#: Where statements nest (imports are statements: expressions need not be walked).
STATEMENT_LISTS = ("body", "orelse", "handlers", "finalbody", "cases")


def _runtime_nodes(tree: ast.AST):
    """Every statement but those under ``if TYPE_CHECKING:`` (annotations only, never imported)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        yield node
        for name in STATEMENT_LISTS:
            stack.extend(getattr(node, name, ()))


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
    cycles = [] if nx.is_directed_acyclic_graph(graph) else list(nx.simple_cycles(graph))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_app_imports_twin_but_the_api_framework_base():
    """``twin`` is glue: the apps and ``utilities`` reach only its API framework base, which
    itself imports no app."""
    offenders = []
    for path in _code_files(*APPS, "utilities"):
        for module in _imports(path):
            if _top(module) == "twin" and not module.startswith(TWIN_FRAMEWORK):
                offenders.append(f"{path.relative_to(ROOT)}: imports {module}")
    assert not offenders, "\n".join(offenders)
    for name in TWIN_FRAMEWORK:
        path = ROOT / (name.replace(".", "/") + ".py")
        apps = sorted(m for m in _imports(path) if _top(m) in APPS)
        assert not apps, f"{name} (the API framework base) imports {apps}"


def test_twin_imports_apps_only_in_its_url_and_routing_glue():
    offenders = []
    for path in _code_files("twin"):
        relative = path.relative_to(ROOT).as_posix()
        if relative in TWIN_GLUE:
            continue
        apps = sorted(m for m in _imports(path) if _top(m) in APPS)
        if apps:
            offenders.append(f"{relative}: imports {apps}")
    assert not offenders, "\n".join(offenders)


def test_teams_is_the_bottom_app():
    """Every app may import ``teams``; ``teams`` imports no other app (only the project's API
    framework base and ``utilities``)."""
    offenders = [
        f"{path.relative_to(ROOT)}: imports {module}"
        for path in _code_files("teams")
        for module in _imports(path)
        if _top(module) in ("scenarios", "topology")
    ]
    assert not offenders, "\n".join(offenders)


def test_topology_never_imports_scenarios():
    offenders = [
        f"{path.relative_to(ROOT)}: imports {module}"
        for path in _code_files("topology")
        for module in _imports(path)
        if _top(module) == "scenarios"
    ]
    assert not offenders, "\n".join(offenders)


def test_utilities_import_no_django_and_no_app():
    offenders = [
        f"{path.relative_to(ROOT)}: imports {module}"
        for path in _code_files("utilities")
        for module in _imports(path)
        if _top(module) in (*APPS, "twin", "django", "rest_framework", "celery", "channels")
    ]
    assert not offenders, "\n".join(offenders)


def test_twin_api_reaches_the_bounded_loader_through_utilities_only():
    offenders = [
        f"{path.relative_to(ROOT)}: imports {module}"
        for path in _code_files("twin/api")
        for module in _imports(path)
        if module.startswith("scenarios.sim")
    ]
    assert not offenders, "\n".join(offenders)


def test_no_models_module_imports_the_kind_registry():
    """A model states fields and rules about one row; labels and headlines of run kinds are
    read through the selectors (``scenarios.selectors.run_kind_label``)."""
    offenders = []
    for path in _code_files(*APPS):
        if path.name != "models.py" and "models" not in path.relative_to(ROOT).parts[1:-1]:
            continue
        kinds = sorted(m for m in _imports(path) if _top(m) == "scenarios" and m.split(".")[1:2] == ["kinds"])
        if kinds:
            offenders.append(f"{path.relative_to(ROOT)}: imports {kinds}")
    assert not offenders, "\n".join(offenders)


#: Ways of deciding who may see what that belong in teams/permissions.py only.
VISIBILITY_PATTERNS = re.compile(
    r"visible_to|team__members|user\.teams|\.memberships|TeamMembership\.objects\.filter\(user|is_superuser"
)


def test_visibility_is_decided_only_by_the_permission_module():
    offenders = []
    for path in _middle_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative == "teams/permissions.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if VISIBILITY_PATTERNS.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_every_view_consumer_and_service_reaching_an_object_goes_through_the_permission_module():
    """A module that loads team-owned rows on behalf of a user must import restrict/require, or
    find its objects only through its package's doors module (which does)."""
    doors = [
        "scenarios/views/doors.py",
        "scenarios/views/scenarios.py",
        "scenarios/views/runs.py",
        "scenarios/views/compare.py",
        "scenarios/views/designs.py",
        "scenarios/views/kind_data.py",
        "scenarios/consumers.py",
        "scenarios/services/scenarios.py",
        "scenarios/services/runs.py",
        "scenarios/services/designs.py",
        "topology/views/doors.py",
        "topology/views/designs.py",
        "topology/views/generate.py",
        "topology/views/racks.py",
        "topology/services/building.py",
        "topology/services/builds.py",
        "topology/services/editing.py",
        "teams/services.py",
        "teams/admin.py",
        "topology/admin.py",
        "teams/views.py",
        "teams/current.py",
        "teams/api/base.py",
        "teams/api/views.py",
        "scenarios/api/views.py",
        "scenarios/api/designs.py",
        "topology/api/views.py",
    ]
    for relative in doors:
        text = (ROOT / relative).read_text(encoding="utf-8")
        assert "teams.permissions" in text or ".views.doors import" in text, (
            f"{relative} does not use teams.permissions"
        )


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


@pytest.mark.parametrize("package", ["scenarios", "topology", "teams", "twin", "utilities"])
def test_modules_stay_readable(package):
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in (ROOT / package).rglob("*.py")
        if "/migrations/" not in p.as_posix() and (n := len(p.read_text(encoding="utf-8").splitlines())) > 650
    ]
    assert not long, long


def test_no_path_of_one_machine_in_the_code():
    offenders = []
    for folder in ("scenarios", "topology", "teams", "twin", "utilities", "bench", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if re.search(r"""["'](/work|/home|/root)/""", text):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders
