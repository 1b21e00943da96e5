"""Butcher and Rosenbrock tableaux, typed from the papers (checked by the identities in the tests).

* :data:`DOPRI5`: Dormand & Prince (1980), the explicit 5(4) pair with FSAL (Hairer, Nørsett &
  Wanner, *Solving ODEs I*, Table II.5.2).
* :data:`DOP853`: Dormand & Prince's explicit 8(5,3) pair with FSAL as in Hairer's ``DOP853``
  (Hairer, Nørsett & Wanner, *Solving ODEs I*, II.10), the coefficients as SciPy's ``DOP853``
  uses them (from Hairer's code); the error estimate combines the fifth- and third-order
  embedded differences ``DOP_E5``, ``DOP_E3``. The order conditions up to 8 are checked in the
  tests.
* :data:`ROS34PW2`: Rang & Angermann (2005), a 4-stage Rosenbrock-W method of order 3 with an
  embedded order-2 solution; L-stable, stiffly accurate, and of order 3 for *any* matrix ``W``
  used in place of the Jacobian (a W-method). Stored in the ``(α, Γ, b, b̂)`` form of the paper and
  transformed to the ``(a, c, m, m̂)`` form of Hairer & Wanner (*Solving ODEs II*, IV.7, eq. 7.25)
  that needs no Jacobian-vector product:
  ``(I/(hγ) − J) u_i = f(t + α_i h, y + Σ_j a_ij u_j) + Σ_j (c_ij/h) u_j``, ``y₁ = y + Σ m_i u_i``.

??? cite "References"
    Dormand, J. R. & Prince, P. J. (1980). A family of embedded Runge–Kutta formulae.
    J. Comput. Appl. Math. 6(1), 19–26.
    Prince, P. J. & Dormand, J. R. (1981). High order embedded Runge–Kutta formulae.
    J. Comput. Appl. Math. 7(1), 67–75.
    Rang, J. & Angermann, L. (2005). New Rosenbrock W-methods of order 3 for partial
    differential algebraic equations of index 1. BIT 45, 761–787.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics import lapack

# ----------------------------------------------------------------------------- Dormand–Prince 5(4)
DP_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
DP_A = np.zeros((7, 7))
DP_A[1, 0] = 1 / 5
DP_A[2, :2] = [3 / 40, 9 / 40]
DP_A[3, :3] = [44 / 45, -56 / 15, 32 / 9]
DP_A[4, :4] = [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729]
DP_A[5, :5] = [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]
DP_A[6, :6] = [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]
DP_B = DP_A[6].copy()  # 5th order weights (FSAL: stage 7 is f(y₁))
DP_BHAT = np.array(
    [5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40]
)  # embedded 4th order weights
DP_E = DP_B - DP_BHAT
DP_ORDER, DP_ERROR_ORDER = 5, 4

# ----------------------------------------------------------------------------- ROS34PW2
ROS_GAMMA = 4.3586652150845900e-01
ROS_ALPHA = np.zeros((4, 4))  # strictly lower: stage arguments y + Σ α_ij k_j
ROS_ALPHA[1, 0] = 8.7173304301691801e-01
ROS_ALPHA[2, :2] = [8.4457060015369423e-01, -1.1299064236484185e-01]
ROS_ALPHA[3, :3] = [0.0, 0.0, 1.0]
ROS_GAMMA_MATRIX = np.diag(np.full(4, ROS_GAMMA))  # lower triangular Γ
ROS_GAMMA_MATRIX[1, 0] = -8.7173304301691801e-01
ROS_GAMMA_MATRIX[2, :2] = [-9.0338057013044082e-01, 5.4180672388095326e-02]
ROS_GAMMA_MATRIX[3, :3] = [2.4212380706095346e-01, -1.2232505839045147e00, 5.4526025533510214e-01]
ROS_B = np.array(
    [2.4212380706095346e-01, -1.2232505839045147e00, 1.5452602553351020e00, 4.3586652150845900e-01]
)
ROS_BHAT = np.array(
    [
        3.7810903145819369e-01,
        -9.6042292212423178e-02,
        5.0000000000000000e-01,
        2.1793326075422950e-01,
    ]
)
ROS_ORDER, ROS_ERROR_ORDER = 3, 2

# transformed (Hairer–Wanner) coefficients
_GINV = np.linalg.inv(ROS_GAMMA_MATRIX)
ROS_A = np.tril(ROS_ALPHA @ _GINV, -1)  # strictly lower
ROS_CMAT = np.tril(np.diag(1.0 / np.diag(ROS_GAMMA_MATRIX)) - _GINV, -1)  # strictly lower
ROS_M = ROS_B @ _GINV
ROS_MHAT = ROS_BHAT @ _GINV
ROS_MERR = ROS_M - ROS_MHAT
ROS_C = ROS_ALPHA.sum(axis=1)  # stage times α_i

# ----------------------------------------------------------------------------- Radau IIA (3 stages)
# Hairer & Wanner, Solving ODEs II, IV.5 (Table 5.6): collocation at the Radau points, order 5.
_S6 = np.sqrt(6.0)
RADAU_C = np.array([(4 - _S6) / 10, (4 + _S6) / 10, 1.0])
RADAU_A = np.array(
    [
        [(88 - 7 * _S6) / 360, (296 - 169 * _S6) / 1800, (-2 + 3 * _S6) / 225],
        [(296 + 169 * _S6) / 1800, (88 + 7 * _S6) / 360, (-2 - 3 * _S6) / 225],
        [(16 - _S6) / 36, (16 + _S6) / 36, 1 / 9],
    ]
)
# embedded error estimate (Hairer & Wanner IV.8, eq. 8.20): err = (I/(hγ₀) − J)⁻¹[f(y) + Σ e_i z_i / h]
RADAU_E = np.array([-13 - 7 * _S6, -13 + 7 * _S6, -1.0]) / 3
RADAU_ORDER = 5


def _radau_transform():
    """Real block form of A⁻¹ = T Λ T⁻¹ with Λ = diag(μ, [[α, −β], [β, α]]) (computed, not typed).

    The three eigenvalues are distinct, so the result does not depend on LAPACK's choices: they
    are picked by their imaginary parts (not by position) and each eigenvector is scaled by its
    last component (not by LAPACK's normalisation)."""
    Ainv = np.linalg.inv(RADAU_A)
    w, V = lapack.eig(Ainv)
    ir = int(np.argmin(np.abs(w.imag)))
    ic = int(np.argmax(w.imag))
    mu = w[ir].real
    lam = w[ic]
    vr = V[:, ir].real / V[2, ir].real
    vc = V[:, ic] / V[2, ic]
    T = np.column_stack([vr, vc.real, vc.imag])
    return mu, complex(lam.conjugate()), T, np.linalg.inv(T)  # μ_c = α − iβ (Newton form)


RADAU_MU_REAL, RADAU_MU_COMPLEX, RADAU_T, RADAU_TI = _radau_transform()
# dense output: u(t + xh) = y + Σ_j q_j x^j with Σ_j q_j c_i^j = z_i  →  q = V⁻¹ z, V_ij = c_i^j
RADAU_VINV = np.linalg.inv(np.array([[c, c * c, c * c * c] for c in RADAU_C]))
# continuous extension (Hairer's CONTD5, order 4): the coefficient vector of the last term
DP_DENSE = np.array(
    [
        -12715105075 / 11282082432,
        0.0,
        87487479700 / 32700410799,
        -10690763975 / 1880347072,
        701980252875 / 199316789632,
        -1453857185 / 822651844,
        69997945 / 29380423,
    ]
)
# ------------------------------------------------------------------------ Dormand–Prince 8(5,3)
DOP_C = np.array(
    [
        0.0,
        0.05260015195876773,
        0.0789002279381516,
        0.1183503419072274,
        0.2816496580927726,
        0.3333333333333333,
        0.25,
        0.3076923076923077,
        0.6512820512820513,
        0.6,
        0.8571428571428571,
        1.0,
    ]
)
DOP_A = np.zeros((13, 12))  # rows 0–11 the stages, row 12 the 8th-order weights (FSAL)
DOP_A[1, 0] = 0.05260015195876773
DOP_A[2, 0] = 0.0197250569845379
DOP_A[2, 1] = 0.0591751709536137
DOP_A[3, 0] = 0.02958758547680685
DOP_A[3, 2] = 0.08876275643042054
DOP_A[4, 0] = 0.2413651341592667
DOP_A[4, 2] = -0.8845494793282861
DOP_A[4, 3] = 0.924834003261792
DOP_A[5, 0] = 0.037037037037037035
DOP_A[5, 3] = 0.17082860872947386
DOP_A[5, 4] = 0.12546768756682242
DOP_A[6, 0] = 0.037109375
DOP_A[6, 3] = 0.17025221101954405
DOP_A[6, 4] = 0.06021653898045596
DOP_A[6, 5] = -0.017578125
DOP_A[7, 0] = 0.03709200011850479
DOP_A[7, 3] = 0.17038392571223998
DOP_A[7, 4] = 0.10726203044637328
DOP_A[7, 5] = -0.015319437748624402
DOP_A[7, 6] = 0.008273789163814023
DOP_A[8, 0] = 0.6241109587160757
DOP_A[8, 3] = -3.3608926294469414
DOP_A[8, 4] = -0.868219346841726
DOP_A[8, 5] = 27.59209969944671
DOP_A[8, 6] = 20.154067550477894
DOP_A[8, 7] = -43.48988418106996
DOP_A[9, 0] = 0.47766253643826434
DOP_A[9, 3] = -2.4881146199716677
DOP_A[9, 4] = -0.590290826836843
DOP_A[9, 5] = 21.230051448181193
DOP_A[9, 6] = 15.279233632882423
DOP_A[9, 7] = -33.28821096898486
DOP_A[9, 8] = -0.020331201708508627
DOP_A[10, 0] = -0.9371424300859873
DOP_A[10, 3] = 5.186372428844064
DOP_A[10, 4] = 1.0914373489967295
DOP_A[10, 5] = -8.149787010746927
DOP_A[10, 6] = -18.52006565999696
DOP_A[10, 7] = 22.739487099350505
DOP_A[10, 8] = 2.4936055526796523
DOP_A[10, 9] = -3.0467644718982196
DOP_A[11, 0] = 2.273310147516538
DOP_A[11, 3] = -10.53449546673725
DOP_A[11, 4] = -2.0008720582248625
DOP_A[11, 5] = -17.9589318631188
DOP_A[11, 6] = 27.94888452941996
DOP_A[11, 7] = -2.8589982771350235
DOP_A[11, 8] = -8.87285693353063
DOP_A[11, 9] = 12.360567175794303
DOP_A[11, 10] = 0.6433927460157636
DOP_A[12, 0] = 0.054293734116568765
DOP_A[12, 5] = 4.450312892752409
DOP_A[12, 6] = 1.8915178993145003
DOP_A[12, 7] = -5.801203960010585
DOP_A[12, 8] = 0.3111643669578199
DOP_A[12, 9] = -0.1521609496625161
DOP_A[12, 10] = 0.20136540080403034
DOP_A[12, 11] = 0.04471061572777259
DOP_B = DOP_A[12].copy()
DOP_E5 = np.zeros(12)
DOP_E5[0] = 0.01312004499419488
DOP_E5[5] = -1.2251564463762044
DOP_E5[6] = -0.4957589496572502
DOP_E5[7] = 1.6643771824549864
DOP_E5[8] = -0.35032884874997366
DOP_E5[9] = 0.3341791187130175
DOP_E5[10] = 0.08192320648511571
DOP_E5[11] = -0.022355307863886294
DOP_E3 = np.zeros(12)
DOP_E3[0] = -0.18980075407240762
DOP_E3[5] = 4.450312892752409
DOP_E3[6] = 1.8915178993145003
DOP_E3[7] = -5.801203960010585
DOP_E3[8] = -0.4226823213237919
DOP_E3[9] = -0.1521609496625161
DOP_E3[10] = 0.20136540080403034
DOP_E3[11] = 0.02265179219836082
DOP_ORDER, DOP_ERROR_ORDER = 8, 7

# Every table is read-only: a constant, and of the type compiled code gives it (a global array is
# frozen into the machine code read-only), so a helper called with a table both from the Python
# driver and from a compiled step is compiled once, for one type (radau._mix3 with RADAU_VINV).
for _table in [v for v in globals().values() if isinstance(v, np.ndarray)]:
    _table.setflags(write=False)
del _table
