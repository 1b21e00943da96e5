"""The integrators' tableaux (numerics.integrators.tableaux) satisfy their order conditions
exactly up to the rounding of their coefficients (verify.reference.tableaux), and a relative
perturbation of 1e-6 of any non-zero coefficient breaks at least one condition."""

import numpy as np
import pytest

from fastslow.numerics.integrators import tableaux
from fastslow.verify.reference import tableaux as reference_tableaux


def dopri5(arrs):
    A, b, bhat, c = arrs["DP_A"], arrs["DP_B"], arrs["DP_BHAT"], arrs["DP_C"]
    return reference_tableaux.runge_kutta_conditions(
        A, b, c, 5, "b: "
    ) + reference_tableaux.runge_kutta_conditions(A, bhat, c, 4, "bhat: ")


def dop853(arrs):
    A, c = arrs["DOP_A"][:12], arrs["DOP_C"]
    b = arrs["DOP_A"][12]
    return (
        reference_tableaux.runge_kutta_conditions(A, b, c, 8, "b: ")
        + reference_tableaux.runge_kutta_conditions(A, b - arrs["DOP_E5"], c, 5, "b - e5: ")
        + reference_tableaux.runge_kutta_conditions(A, b - arrs["DOP_E3"], c, 3, "b - e3: ")
        + [
            reference_tableaux.condition("B = last row", [x], y)
            for x, y in zip(
                map(reference_tableaux.exact, arrs["DOP_B"]), map(reference_tableaux.exact, b)
            )
        ]
    )


def radau(arrs):
    A, c, e = arrs["RADAU_A"], arrs["RADAU_C"], arrs["RADAU_E"]
    return (
        reference_tableaux.runge_kutta_conditions(A, A[2], c, 5)
        + reference_tableaux.collocation_conditions(A, c, 3)
        + reference_tableaux.moment_conditions(e, c, [-1, 0, 0], "error estimate: ")
    )


def ros34pw2(arrs):
    G = arrs["ROS_GAMMA_MATRIX"].copy()
    return reference_tableaux.rosenbrock_w_conditions(
        arrs["ROS_ALPHA"], G, arrs["ROS_B"], arrs["ROS_BHAT"]
    ) + [
        reference_tableaux.condition(
            "γ", [reference_tableaux.exact(arrs["ROS_GAMMA"][0])], reference_tableaux.exact(G[0, 0])
        )
    ]


METHODS = {
    "DOPRI5": (dopri5, ("DP_A", "DP_B", "DP_BHAT", "DP_C")),
    "DOP853": (dop853, ("DOP_A", "DOP_B", "DOP_C", "DOP_E5", "DOP_E3")),
    "RadauIIA5": (radau, ("RADAU_A", "RADAU_C", "RADAU_E")),
    "ROS34PW2": (ros34pw2, ("ROS_ALPHA", "ROS_GAMMA_MATRIX", "ROS_B", "ROS_BHAT", "ROS_GAMMA")),
}


def arrays(names):
    return {n: np.atleast_1d(np.array(getattr(tableaux, n), dtype=float)) for n in names}


def test_tree_counts():
    assert [len(reference_tableaux.trees(p)) for p in range(1, 9)] == [1, 1, 2, 4, 9, 20, 48, 115]
    assert (
        reference_tableaux.density(((),)) == 2
        and reference_tableaux.density(((), ())) == 3
        and reference_tableaux.density((((),),)) == 6
    )


@pytest.mark.parametrize("method", METHODS)
def test_tableau_satisfies_its_order_conditions(method):
    fn, names = METHODS[method]
    bad = [(c.name, float(c.residual)) for c in fn(arrays(names)) if not c.holds]
    assert bad == []


@pytest.mark.parametrize("method", METHODS)
def test_every_coefficient_perturbed_by_1e_6_breaks_a_condition(method):
    fn, names = METHODS[method]
    base = arrays(names)
    survivors = []
    for name in names:
        for idx in zip(*np.nonzero(base[name])):
            arrs = {k: v.copy() for k, v in base.items()}
            arrs[name][idx] *= 1 + 1e-6
            if all(c.holds for c in fn(arrs)):
                survivors.append((name, idx))
    assert survivors == []
