"""route(): paths for every pair, hop counts vs networkx, ECMP flow conservation, loads."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from topology.fabric.compiled import compile_plan
from topology.fabric.generators import generate
from topology.fabric.graph import plan_to_graph
from topology.fabric.plan import FabricError


@pytest.fixture(scope="module")
def three_tier(catalog):
    # SU of 2 nodes -> 20 SUs * 8 rails = 160 leaves > 32 per pod: 5 pods, 3 tiers, 320 GPUs
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=40, su_nodes=2, tiers=3)
    return plan, compile_plan(plan)


@pytest.fixture(scope="module")
def two_tier(catalog):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=100)
    return plan, compile_plan(plan)


@pytest.fixture(scope="module")
def fat_tree(catalog):
    # 100 DGX A100 on QM8700: 2 nodes per leaf, 50 leaves > 40 ports: 3 tiers, 3 pods
    plan = generate("fat-tree", catalog=catalog, server="dgx-a100", nodes=100, oversubscription=1.0)
    return plan, compile_plan(plan)


def _all_pairs(n):
    src, dst = np.divmod(np.arange(n * n), n)
    return src, dst


def _walk_is_contiguous(plan, fabric, src, dst, routes):
    """Every hash route is a walk NIC -> ... -> NIC along its directed links, in slot order."""
    incidence = routes.incidence
    counts = np.diff(incidence.indptr)
    assert np.array_equal(counts, np.where(routes.same_domain, 0, routes.hops + 1))
    assert np.all(incidence.data == 1.0)
    a, b = plan.link_a, plan.link_b
    for n_links in np.unique(counts[counts > 0]):
        rows = np.flatnonzero(counts == n_links)
        directed = incidence.indices[(incidence.indptr[rows][:, None] + np.arange(n_links))]
        link, down = directed // 2, directed % 2
        half = n_links // 2
        assert np.all(down[:, :half] == 0) and np.all(down[:, half:] == 1)
        assert np.array_equal(a[link[:, 0]], fabric.gpu_nic[src[rows]])
        assert np.array_equal(a[link[:, -1]], fabric.gpu_nic[dst[rows]])
        for k in range(half - 1):  # up: the upper end of one link is the lower end of the next
            assert np.array_equal(b[link[:, k]], a[link[:, k + 1]])
        assert np.array_equal(b[link[:, half - 1]], b[link[:, half]])  # the turning switch
        for k in range(half, n_links - 1):
            assert np.array_equal(a[link[:, k]], b[link[:, k + 1]])


@pytest.mark.parametrize("design", ["three_tier", "two_tier", "fat_tree"])
def test_route_every_gpu_pair_has_a_path(request, design):
    plan, fabric = request.getfixturevalue(design)
    src, dst = _all_pairs(fabric.n_gpus)
    routes = fabric.route(src, dst)
    fabric_flows = ~routes.same_domain
    assert np.all(np.diff(routes.incidence.indptr)[fabric_flows] >= 2)
    _walk_is_contiguous(plan, fabric, src, dst, routes)


def test_route_hop_counts_by_case(three_tier):
    _, fabric = three_tier
    src, dst = _all_pairs(fabric.n_gpus)
    routes = fabric.route(src, dst)
    assert routes.hops.max() == 5
    same_domain = fabric.gpu_domain[src] == fabric.gpu_domain[dst]
    assert np.array_equal(routes.same_domain, same_domain)
    assert np.all(routes.hops[same_domain] == 0)
    leaf_s, leaf_d = fabric.nic_leaf[fabric.gpu_nic[src]], fabric.nic_leaf[fabric.gpu_nic[dst]]
    pod_s, pod_d = fabric.switch_pod[leaf_s], fabric.switch_pod[leaf_d]
    expected = np.select([same_domain, leaf_s == leaf_d, pod_s == pod_d], [0, 1, 3], default=5)
    assert np.array_equal(routes.hops, expected)
    assert set(np.unique(routes.hops).tolist()) == {0, 1, 3, 5}


@pytest.mark.parametrize("design", ["three_tier", "two_tier", "fat_tree"])
def test_route_matches_networkx_shortest_paths(request, design):
    plan, fabric = request.getfixturevalue(design)
    graph = plan_to_graph(plan)
    network = graph.subgraph(v for v in graph if v[0] in ("nic", "switch"))
    rng = np.random.default_rng(7)
    src = rng.integers(0, fabric.n_gpus, 200)
    dst = rng.integers(0, fabric.n_gpus, 200)
    routes = fabric.route(src, dst)
    for f in range(src.size):
        if routes.same_domain[f]:
            assert routes.hops[f] == 0
            continue
        path = nx.shortest_path(
            network, ("nic", int(fabric.gpu_nic[src[f]])), ("nic", int(fabric.gpu_nic[dst[f]]))
        )
        assert routes.hops[f] == len(path) - 2  # switches between the two NICs
        row = routes.incidence.indices[routes.incidence.indptr[f] : routes.incidence.indptr[f + 1]] // 2
        for link in row:  # every link of the route is an edge of the graph
            a, b = int(plan.link_a[link]), int(plan.link_b[link])
            u = ("nic", a) if a < plan.n_nic_ports else ("switch", a - plan.n_nic_ports)
            assert network.has_edge(u, ("switch", b - plan.n_nic_ports))


def _tier_direction_sums(plan, fabric, routes):
    """(F, 3 tiers, 2 directions) sum of fractions per flow."""
    n_directed = 2 * fabric.n_links
    tier = np.repeat(plan.link_tier, 2)
    direction = np.tile([0, 1], fabric.n_links)
    indicator = np.zeros((n_directed, 6))
    indicator[np.arange(n_directed), tier * 2 + direction] = 1.0
    return np.asarray(routes.incidence @ indicator).reshape(-1, 3, 2)


@pytest.mark.parametrize("ecmp", ["hash", "spread"])
@pytest.mark.parametrize("design", ["three_tier", "two_tier", "fat_tree"])
def test_route_conserves_flow_per_tier(request, design, ecmp):
    plan, fabric = request.getfixturevalue(design)
    rng = np.random.default_rng(1)
    src = rng.integers(0, fabric.n_gpus, 3000)
    dst = rng.integers(0, fabric.n_gpus, 3000)
    routes = fabric.route(src, dst, ecmp=ecmp)
    sums = _tier_direction_sums(plan, fabric, routes)
    expected = np.zeros_like(sums)
    expected[:, 0, :] = (routes.hops >= 1)[:, None]
    expected[:, 1, :] = (routes.hops >= 3)[:, None]
    expected[:, 2, :] = (routes.hops >= 5)[:, None]
    assert np.allclose(sums, expected)


def test_route_spread_splits_evenly_over_the_leaf_uplinks(three_tier):
    _, fabric = three_tier
    src = np.array([0])
    dst = np.array([fabric.n_gpus - 1])  # different pod
    routes = fabric.route(src, dst, ecmp="spread")
    assert routes.hops.tolist() == [5]
    values = routes.incidence.data
    leaf_up = int(np.diff(fabric.up_ptr)[fabric.nic_leaf[0]])
    pod_links = int(np.diff(fabric.pod_up_ptr)[0])
    assert np.isclose(values, 1.0 / leaf_up).sum() == 2 * leaf_up
    assert np.isclose(values, 1.0 / pod_links).sum() == 2 * pod_links
    assert routes.incidence.nnz == 2 + 2 * leaf_up + 2 * pod_links


def test_route_hash_is_deterministic_and_salt_moves_flows(three_tier):
    _, fabric = three_tier
    rng = np.random.default_rng(3)
    src = rng.integers(0, fabric.n_gpus, 2000)
    dst = rng.integers(0, fabric.n_gpus, 2000)
    first = fabric.route(src, dst, salt=5).incidence
    again = fabric.route(src, dst, salt=5).incidence
    other = fabric.route(src, dst, salt=6).incidence
    assert (first != again).nnz == 0
    assert (first != other).nnz > 0


def test_route_hash_spreads_flows_over_uplinks(two_tier):
    _, fabric = two_tier
    leaf = int(fabric.nic_leaf[0])
    dst = np.arange(fabric.n_gpus)
    behind_other_leaf = fabric.nic_leaf[fabric.gpu_nic[dst]] != leaf
    dst = dst[behind_other_leaf & (fabric.gpu_domain[dst] != fabric.gpu_domain[0])]
    src = np.zeros(dst.size, np.int64)
    routes = fabric.route(src, dst, ecmp="hash")
    start, stop = fabric.up_ptr[leaf], fabric.up_ptr[leaf + 1]
    load = np.asarray(routes.incidence.sum(axis=0)).ravel()[2 * fabric.up_link[start:stop]]
    assert stop - start == 32
    assert load.sum() == dst.size  # ~760 flows over 32 uplinks
    assert np.all(load > 0)
    assert load.max() <= 3 * load.mean()


def test_route_latency_sums_optics_and_switches(two_tier):
    _, fabric = two_tier
    optic, switch = 100e-9, 130e-9
    src = np.array([0, 0, 0])
    dst = np.array([1, 8, 9])  # same domain, same leaf (rail 0 of node 1), other rail
    routes = fabric.route(src, dst)
    assert routes.hops.tolist() == [0, 1, 3]
    assert routes.latency_s[0] == 0.0
    assert routes.latency_s[1] == pytest.approx(2 * optic + switch)
    assert routes.latency_s[2] == pytest.approx(4 * optic + 3 * switch)


@pytest.mark.parametrize("ecmp", ["hash", "spread"])
@pytest.mark.parametrize("design", ["three_tier", "fat_tree"])
def test_link_load_matches_the_incidence(request, design, ecmp):
    _, fabric = request.getfixturevalue(design)
    rng = np.random.default_rng(11)
    src = rng.integers(0, fabric.n_gpus, 5000)
    dst = rng.integers(0, fabric.n_gpus, 5000)
    rate = rng.uniform(1.0, 400.0, 5000)
    expected = fabric.route(src, dst, ecmp=ecmp, salt=2).incidence.T @ rate
    load = fabric.link_load_gbps(src, dst, rate, ecmp=ecmp, salt=2)
    assert load.shape == (2 * fabric.n_links,)
    assert np.allclose(load, expected)


def test_route_empty_flow_list(two_tier):
    _, fabric = two_tier
    routes = fabric.route(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert routes.incidence.shape == (0, 2 * fabric.n_links)
    assert routes.hops.size == 0


@pytest.mark.parametrize(
    ("src", "dst", "ecmp", "field"),
    [
        ([0], [10_000], "hash", "dst_gpu"),
        ([-1], [0], "hash", "src_gpu"),
        ([0, 1], [0], "hash", "src_gpu, dst_gpu"),
        ([0.5], [1.0], "hash", "src_gpu, dst_gpu"),
        ([0], [1], "random", "ecmp"),
    ],
)
def test_route_rejects_bad_input_naming_the_field(two_tier, src, dst, ecmp, field):
    _, fabric = two_tier
    with pytest.raises(FabricError) as error:
        fabric.route(np.array(src), np.array(dst), ecmp=ecmp)
    assert str(error.value).startswith(f"{field}:")


def test_route_single_leaf_fabric_has_one_tier(catalog):
    # 3 DGX on a fat-tree leaf (4 nodes per leaf at 1:1): no spines, every fabric flow 1 hop
    plan = generate("fat-tree", catalog=catalog, server="dgx-h100", nodes=3)
    fabric = compile_plan(plan)
    assert plan.n_tiers == 1 and plan.n_switches["spine"] == 0
    src, dst = _all_pairs(fabric.n_gpus)
    routes = fabric.route(src, dst)
    assert set(routes.hops.tolist()) == {0, 1}
    assert np.array_equal(routes.hops == 0, fabric.gpu_node[src] == fabric.gpu_node[dst])


@pytest.mark.parametrize("seed", range(8))
def test_route_random_small_designs_conserve_flow_and_classify_hops(catalog, seed):
    rng = np.random.default_rng(seed)
    name = ["rail-optimized", "fat-tree", "nvl72"][seed % 3]
    servers = ["dgx-a100", "dgx-h100", "mi300x-platform"]
    server = "gb200-nvl72" if name == "nvl72" else str(rng.choice(servers))
    nodes = 18 * int(rng.integers(1, 12)) if name == "nvl72" else int(rng.integers(2, 400))
    ratio = float(rng.choice([1.0, 1.5, 2.0, 3.0]))
    su_nodes = [None, 2, 3][seed % 3] if name == "rail-optimized" else None
    plan = generate(
        name, catalog=catalog, server=server, nodes=nodes, oversubscription=ratio, su_nodes=su_nodes
    )
    fabric = compile_plan(plan)
    src = rng.integers(0, fabric.n_gpus, 2000)
    dst = rng.integers(0, fabric.n_gpus, 2000)
    leaf_s, leaf_d = fabric.nic_leaf[fabric.gpu_nic[src]], fabric.nic_leaf[fabric.gpu_nic[dst]]
    expected_hops = np.select(
        [
            fabric.gpu_domain[src] == fabric.gpu_domain[dst],
            leaf_s == leaf_d,
            fabric.switch_pod[leaf_s] == fabric.switch_pod[leaf_d],
        ],
        [0, 1, 3],
        default=5,
    )
    for ecmp in ("hash", "spread"):
        routes = fabric.route(src, dst, ecmp=ecmp, salt=seed)
        assert np.array_equal(routes.hops, expected_hops)
        sums = _tier_direction_sums(plan, fabric, routes)
        for tier, min_hops in enumerate((1, 3, 5)):
            assert np.allclose(sums[:, tier, :], (routes.hops >= min_hops)[:, None])
        load = fabric.link_load_gbps(src, dst, 1.0, ecmp=ecmp, salt=seed)
        assert np.allclose(load, routes.incidence.T @ np.ones(src.size))
