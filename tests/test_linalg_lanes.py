"""The block solves of numerics.integrators.linalg on eight lanes (``k`` a multiple of 8) give the
same bits as the scalar loops they replace, and the scalar loops still serve the other ``k``.

Bit for bit means equal int64 views (so a ``−0`` against a ``+0`` counts as a difference): the
lanes path promises the same operations in the same order per output entry, not merely a close
result. The right-hand sides hold exact zeros and negative zeros as well as random numbers, and the
blocks need pivoting (a zero leading entry of ``σI − J``).
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from fastslow.numerics.integrators import linalg

SHIFT_REAL = 2.0
SHIFT_COMPLEX = 2.0 + 0.7j


def _bits(x):
    return np.ascontiguousarray(x).view(np.int64)


def _same_bits(a, b):
    return np.array_equal(_bits(a), _bits(b))


def _blocks(m, mb, seed):
    """``J`` stored as the rows of its ``mb×mb`` diagonal blocks; every block's first diagonal
    entry equals the real shift, so the first pivot must be swapped."""
    rng = np.random.default_rng(seed)
    J = rng.standard_normal((m, mb)) / np.sqrt(mb)
    for b in range(0, m, mb):
        J[b, 0] = SHIFT_REAL
    return J


def _vectors(n, count, seed):
    """``count`` right-hand sides of length ``n`` with exact ``±0`` mixed in."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        v = rng.standard_normal(n)
        v[rng.random(n) < 0.1] = 0.0
        v[rng.random(n) < 0.1] = -0.0
        out.append(v)
    return out


def _factors(J, m, mb):
    Fr = np.empty((m, mb))
    Fc = np.empty((m, mb), complex)
    pr, pc = np.zeros(m, np.int64), np.zeros(m, np.int64)
    linalg.factor_shifted(J, SHIFT_REAL, m, mb, linalg.BLOCK, Fr, pr)
    linalg.factor_shifted(J, SHIFT_COMPLEX, m, mb, linalg.BLOCK, Fc, pc)
    return Fr, pr, Fc, pc


def _public_and_scalar(m, mb, k, seed):
    """Each BLOCK solve through the public function and through the scalar loops:
    ``[(name, public result, scalar result), ...]``."""
    J = _blocks(m, mb, seed)
    Fr, pr, Fc, pc = _factors(J, m, mb)
    n = m * k
    vr, vcr, vci, wt = _vectors(n, 4, seed + 1)
    wt = np.abs(wt) + 0.5
    sw = np.empty(0)
    BL = linalg.BLOCK
    got, want = [np.empty(n) for _ in range(3)], [np.empty(n) for _ in range(3)]
    s_got = linalg.solve_pair_norm2(J, Fr, pr, Fc, pc, vr, vcr, vci, *got, m, mb, k, BL, sw, wt)
    s_want = linalg._pair_blocks(Fr, Fc, vr, vcr, vci, *want, m, k, wt)
    rows = [("pair_norm2", [*got, s_got], [*want, s_want])]
    got2, want2 = [np.empty(n) for _ in range(3)], [np.empty(n) for _ in range(3)]
    linalg.solve_pair(J, Fr, pr, Fc, pc, vr, vcr, vci, *got2, m, mb, k, BL, sw)
    s_want = linalg._pair_blocks(Fr, Fc, vr, vcr, vci, *want2, m, k, vr[:0])
    s_got = linalg.solve_pair_norm2(
        J, Fr, pr, Fc, pc, vr, vcr, vci, *got2, m, mb, k, BL, sw, vr[:0]
    )
    rows.append(("pair unweighted", [*got2, s_got], [*want2, s_want]))
    o, o2 = np.empty(n), np.empty(n)
    linalg.solve_real(J, Fr, pr, vr, o, m, mb, k, BL, sw)
    linalg._real_blocks(Fr, vr, o2, m, k)
    rows.append(("real", [o], [o2]))
    a, b, c, d = (np.empty(n) for _ in range(4))
    linalg.solve_complex(J, Fc, pc, vcr, vci, a, b, m, mb, k, BL, sw)
    linalg._complex_blocks(Fc, vcr, vci, c, d, m, k)
    rows.append(("complex", [a, b], [c, d]))
    return rows


@pytest.mark.parametrize("m, mb", [(64, 8), (16, 8), (32, 4)])
@pytest.mark.parametrize("k", [8, 16, 24])
def test_block_solves_on_lanes_equal_the_scalar_loops_bit_for_bit(m, mb, k):
    """The pair solve with and without the weighted norm, the real and the complex solve."""
    for name, got, want in _public_and_scalar(m, mb, k, seed=10 * k + m):
        for g, w in zip(got, want):
            assert _same_bits(np.asarray(g), np.asarray(w)), name


@pytest.mark.parametrize("k", [1, 4, 12])
def test_other_k_take_the_scalar_loops(k):
    """``k`` not a multiple of 8: the public solves are the scalar loops (a lanes pass would write
    whole vectors of eight past the ends of the ``k``-wide rows), and they solve the system."""
    m, mb = 64, 8
    for name, got, want in _public_and_scalar(m, mb, k, seed=k):
        for g, w in zip(got, want):
            assert _same_bits(np.asarray(g), np.asarray(w)), name


@pytest.mark.parametrize("k", [8, 16])
def test_lanes_block_solves_solve_the_system(k):
    """Against the dense Kronecker system: the lanes path is not only self-consistent."""
    m, mb = 16, 8
    J = _blocks(m, mb, seed=7)
    Fr, pr, Fc, pc = _factors(J, m, mb)
    full = np.zeros((m, m))
    for b in range(0, m, mb):
        full[b : b + mb, b : b + mb] = J[b : b + mb]
    vr, vcr, vci = _vectors(m * k, 3, seed=8)
    outs = [np.empty(m * k) for _ in range(3)]
    linalg.solve_pair(J, Fr, pr, Fc, pc, vr, vcr, vci, *outs, m, mb, k, linalg.BLOCK, np.empty(0))
    for shift, v, x in (
        (SHIFT_REAL, vr, outs[0]),
        (SHIFT_COMPLEX, vcr + 1j * vci, outs[1] + 1j * outs[2]),
    ):
        A = np.kron(shift * np.eye(m) - full, np.eye(k))
        assert np.allclose(A @ x, v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shift", [SHIFT_REAL, SHIFT_COMPLEX])
@pytest.mark.parametrize("m", [8, 64])
def test_block_inverse_on_lanes_equals_the_scalar_gauss_jordan_bit_for_bit(m, shift):
    """``factor_shifted`` with 8×8 blocks (the lanes inverse; a complex shift on interleaved
    (re, im) pairs) against the scalar Gauss–Jordan loops: the same pivots and the same bits,
    for blocks whose first pivot is swapped, a block with a zero column (the ``f = 0`` skip) and,
    at ``m = 64``, a block with an entry of ``1e300`` (entries of the inverse round to zero and
    overflow the same way); the inverses are inverses."""
    J = _blocks(m, 8, seed=m)
    J[3::8, 0] = 3.0  # larger than |σ − J₀₀| (0 or 0.7): every block's first pivot is swapped
    J[:8, 3] = 0.0
    if m > 8:
        J[17, 5] = 1e300
    F = np.empty((m, 8), np.asarray(shift).dtype)
    piv = np.zeros(m, np.int64)
    linalg.factor_shifted(J, shift, m, 8, linalg.BLOCK, F, piv)
    G = shift * np.tile(np.eye(8), (m // 8, 1)) - J
    gpiv = np.zeros(m, np.int64)
    H, hpiv = G.copy(), np.zeros(m, np.int64)
    linalg._invert_blocks(G, gpiv, m, 8)
    assert np.array_equal(piv, gpiv) and np.all(piv[::8] == 3)
    assert _same_bits(F, G)
    # what a Python caller of _invert_blocks_fast gets (its Python body, not the @overload)
    linalg._invert_blocks_fast(H, hpiv, m, 8)
    assert np.array_equal(hpiv, piv) and _same_bits(H, F)
    for b in range(0, m, 8):
        if b != 16:
            A = shift * np.eye(8) - J[b : b + 8]
            assert np.allclose(F[b : b + 8] @ A, np.eye(8), atol=1e-12)


@njit(cache=True)
def _compiled_pivot_size(x):
    return linalg._pivot_size(x)


@pytest.mark.parametrize(
    ("x", "size"), [(-3.0, 3.0), (0.5, 0.5), (0.0, 0.0), (3 + 4j, 25.0), (-0.5j, 0.25)]
)
def test_the_pivot_size_is_the_modulus_or_its_square_in_python_and_compiled(x, size):
    """``_pivot_size``: ``|x|`` for a real ``x``, ``|x|²`` for a complex one (exact on these
    values), the same from Python (its own body) as from compiled code (its ``@overload``), for
    Python and NumPy scalars."""
    for v in (x, np.asarray(x)[()]):
        assert linalg._pivot_size(v) == size
        assert _compiled_pivot_size(v) == size
