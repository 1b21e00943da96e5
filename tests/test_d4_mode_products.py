"""D4's mode products ``D_λ = Π_l (N_l + λM_l)`` (verify/checks/d4.py) on a mask whose block
kernel has complex eigenvalues: each must be what the linearised stack does on ``λ``'s eigenspace,
``(I ⊗ N_0 + K ⊗ M_0)⋯(I ⊗ N_{L−1} + K ⊗ M_{L−1}) (P_λ ⊗ I) = P_λ ⊗ D_λ`` (since
``K P_λ = λ P_λ``), computed here on the T·d-dimensional stack instead of d×d factors."""

import numpy as np

from fastslow.numerics.model.masks import frozen_kernel
from fastslow.verify.checks import d4
from fastslow.verify.user_kernels import user_kernel

CAUSAL3 = np.tril(np.ones((3, 3), bool))
CYCLIC3 = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], bool)  # eigenvalues: cube roots of 1
FULL3 = np.ones((3, 3), bool)


def _mask() -> np.ndarray:
    out = np.zeros((9, 9), bool)
    for b, pat in enumerate((CAUSAL3, CYCLIC3, FULL3)):
        out[3 * b : 3 * b + 3, 3 * b : 3 * b + 3] = pat
    return out


def test_mode_products_on_complex_block_eigenvalues_match_the_stack():
    mask, d, L = _mask(), 2, 3
    K = frozen_kernel(mask)
    projs = user_kernel(mask, 3).projectors()
    lams = sorted(projs, key=lambda lam: (-np.real(lam), -np.imag(lam)))
    assert any(isinstance(lam, complex) for lam in lams)  # the path under test
    assert any(isinstance(lam, float) for lam in lams)
    rng = np.random.default_rng(4)
    N = np.eye(d) + 0.3 * rng.standard_normal((L, d, d))
    M = 0.3 * rng.standard_normal((L, d, d))
    D = d4.mode_products(N, M, lams)
    assert D.shape == (len(lams), d, d)
    stack = np.eye(K.shape[0] * d)
    for Nl, Ml in zip(N, M):
        stack = stack @ (np.kron(np.eye(K.shape[0]), Nl) + np.kron(K, Ml))
    for lam, D_lam in zip(lams, D):
        P = projs[lam]
        assert np.abs(K @ P - lam * P).max() < 1e-12  # P_λ is λ's projector
        want = stack @ np.kron(P, np.eye(d))
        err = np.abs(np.kron(P, D_lam) - want).max() / np.abs(want).max()
        assert err < 1e-12, (lam, err)
        if isinstance(lam, complex):
            assert abs(np.imag(D_lam)).max() > 1e-3  # a complex λ gives a complex D_λ
