"""Numerical checks of the paper's theory (Sec. 3.2 and App. "More about Framework").

Every test drives the public neurons (`FractionalLIF`, `FractionalIF`) or the public
kernel (`fsnn.neurons.memory.history_kernel`) and compares against closed forms:

1. Proposition 1 (long memory): subthreshold f-LIF under constant input converges, as
   dt -> 0, to U(t) = I (1 - E_alpha(-t^alpha / tau)).
2. Theorem 2 (robustness): subthreshold f-IF under constant input is I t^alpha /
   (tau Gamma(alpha+1)); a perturbation eps grows linearly in eps and as t^alpha.
3. Kernel decay: b_m ~ dt^alpha m^(alpha-1) / Gamma(alpha) (log-log slope alpha-1).
4. alpha = 1 collapses to the first-order (Euler) LIF/IF recursions.
5. Power-law vs exponential memory of the response to a single input pulse.

The neurons are run with a threshold of 1e9 (no spikes) unless a test is about resets,
in float64, with the exact `direct` engine so that the discretisation, not an
approximation of the memory sum, is what is measured.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pymittagleffler = pytest.importorskip("pymittagleffler")

from fsnn import FractionalIF, FractionalLIF  # noqa: E402
from fsnn.neurons.memory import history_kernel  # noqa: E402

NO_SPIKE = 1e9


def mittag_leffler(z: np.ndarray, alpha: float) -> np.ndarray:
    """One-parameter Mittag-Leffler function E_alpha(z) for real z (beta = 1)."""
    out = pymittagleffler.mittag_leffler(np.asarray(z, dtype=np.float64), alpha, 1.0)
    out = np.asarray(out)
    assert np.all(np.abs(out.imag) < 1e-10)
    return out.real


def simulate(
    cls,
    x: np.ndarray,
    *,
    alpha: float,
    tau: float,
    dt: float = 1.0,
    method: str = "pred",
    engine: str = "direct",
    threshold: float = NO_SPIKE,
    **kw,
) -> tuple[np.ndarray, np.ndarray]:
    """Run one neuron on a 1-D input trace; returns (spikes[T], v[T]) as float64 numpy."""
    x = torch.as_tensor(np.asarray(x, dtype=np.float64)).reshape(-1, 1, 1)
    neuron = cls(alpha=alpha, tau=tau, threshold=threshold, dt=dt, method=method, engine=engine, **kw)
    with torch.no_grad():
        s, v = neuron(x, return_state=True)
    assert s.shape == x.shape and v.shape == x.shape
    assert v.dtype == torch.float64, "the neuron must keep the float64 input dtype"
    return s.reshape(-1).numpy(), v.reshape(-1).numpy()


def subthreshold(cls, x, **kw) -> np.ndarray:
    s, v = simulate(cls, x, **kw)
    assert s.sum() == 0, "test is meant to stay below threshold"
    return v


def grid(T: int, dt: float) -> np.ndarray:
    """Grid times of the states v[k]: t_k = (k + 1) dt."""
    return (np.arange(T, dtype=np.float64) + 1.0) * dt


def loglog_slope(t: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(np.log(t), np.log(y), 1)[0])


# ---------------------------------------------------------------------------------------
# 1. Proposition 1: Mittag-Leffler relaxation of the subthreshold f-LIF
# ---------------------------------------------------------------------------------------

TAU = 2.0
I_C = 0.7
T_END = 5.0
DTS = (0.1, 0.05, 0.025)


def lif_charge_errors(alpha: float, method: str, dt: float) -> tuple[float, float]:
    """Max |v_k - I (1 - E_alpha(-t_k^alpha / tau))| over 0 < t_k <= T_END and over 1 <= t_k <= T_END."""
    T = int(round(T_END / dt))
    t = grid(T, dt)
    v = subthreshold(FractionalLIF, np.full(T, I_C), alpha=alpha, tau=TAU, dt=dt, method=method)
    err = np.abs(v - I_C * (1.0 - mittag_leffler(-(t**alpha) / TAU, alpha)))
    return float(err.max()), float(err[t >= 1.0 - 1e-9].max())


# Measured (tau=2, I=0.7, t_end=5; max error at dt = 0.1, 0.05, 0.025; observed order log2 ratio):
#
#               whole interval (0, t_end]             away from t=0, [1, t_end]
#   pred 0.3    3.98e-2 2.73e-2 1.85e-2  p ~ 0.56     2.35e-3 1.12e-3 5.37e-4  p ~ 1.06
#   pred 0.5    1.56e-2 8.07e-3 4.13e-3  p ~ 0.97     3.63e-3 1.74e-3 8.43e-4  p ~ 1.05
#   pred 0.8    5.16e-3 2.51e-3 1.24e-3  p ~ 1.02     (same: the max is at t ~ 1.1)
#   gl   0.3    1.98e-2 1.10e-2 5.32e-3  (not monotone) 1.38e-3 6.66e-4 3.27e-4  p ~ 1.03
#   gl   0.5    2.74e-3 1.98e-3 2.98e-3  (not monotone) 2.62e-3 1.27e-3 6.27e-4  p ~ 1.03
#   gl   0.8    4.70e-3 2.32e-3 1.15e-3                4.70e-3 2.32e-3 1.15e-3  p ~ 1.01
#   l1   0.3    3.75e-3 2.04e-3 5.25e-3  (not monotone) 1.05e-3 5.19e-4 2.60e-4  p ~ 1.00
#   l1   0.5    1.12e-2 1.09e-2 9.27e-3  (not monotone) 1.85e-3 9.35e-4 4.73e-4  p ~ 0.99
#   l1   0.8    5.66e-3 3.96e-3 2.52e-3                4.05e-3 2.04e-3 1.03e-3  p ~ 0.99
#
# All three schemes are first order away from t = 0. Near t = 0 the solution behaves like
# t^alpha (not smooth), which gives an initial layer: pred integrates the input part exactly,
# so its first-step error comes from the leak, O(dt^(2 alpha)) (observed order min(1, 2 alpha));
# gl and l1 have an O(dt^alpha) first-step error (relative error 1 - Gamma(1+alpha), resp.
# 1 - Gamma(2-alpha) Gamma(1+alpha), of the first increment) that partly cancels against the
# O(dt) explicit-lag error at coarse dt, so their max over (0, t_end] is not monotone in this
# dt range (it does decrease, like dt^alpha, for dt -> 1e-6). Hence: pred is tested on the
# whole interval, every method on [1, t_end].
RATE_AWAY = 0.6  # err(dt/2)/err(dt) on [1, t_end]: 1/2 for first order (observed 0.48 .. 0.51)
MAX_ERR_AWAY = {  # at dt = 0.025, ~1.5x the measured value
    ("pred", 0.3): 8.0e-4,
    ("pred", 0.5): 1.3e-3,
    ("pred", 0.8): 1.9e-3,
    ("gl", 0.3): 5.0e-4,
    ("gl", 0.5): 1.0e-3,
    ("gl", 0.8): 1.8e-3,
    ("l1", 0.3): 4.0e-4,
    ("l1", 0.5): 7.5e-4,
    ("l1", 0.8): 1.6e-3,
}
RATE_PRED_WHOLE = {0.3: 0.75, 0.5: 0.6, 0.8: 0.6}  # 2^-min(1, 2 alpha) + margin
MAX_ERR_PRED_WHOLE = {0.3: 2.8e-2, 0.5: 6.2e-3, 0.8: 1.9e-3}
MAX_ERR_WHOLE = {"gl": 8.0e-3, "l1": 1.4e-2}  # at dt = 0.025; initial layer, no rate asserted


@pytest.mark.parametrize("method", ["pred", "gl", "l1"])
@pytest.mark.parametrize("alpha", [0.3, 0.5, 0.8])
def test_flif_converges_to_mittag_leffler_relaxation(alpha, method):
    whole, away = zip(*(lif_charge_errors(alpha, method, dt) for dt in DTS))
    for coarse, fine in zip(away[:-1], away[1:]):
        assert fine < RATE_AWAY * coarse, (method, alpha, away)
    assert away[-1] < MAX_ERR_AWAY[(method, alpha)], (method, alpha, away)
    if method == "pred":
        for coarse, fine in zip(whole[:-1], whole[1:]):
            assert fine < RATE_PRED_WHOLE[alpha] * coarse, (alpha, whole)
        assert whole[-1] < MAX_ERR_PRED_WHOLE[alpha], (alpha, whole)
    else:
        assert whole[-1] < MAX_ERR_WHOLE[method], (method, alpha, whole)


@pytest.mark.parametrize("method", ["pred", "gl"])
def test_lif_alpha_one_is_exponential_relaxation(method):
    errs = []
    for dt in DTS:
        T = int(round(T_END / dt))
        t = grid(T, dt)
        v = subthreshold(FractionalLIF, np.full(T, I_C), alpha=1.0, tau=TAU, dt=dt, method=method)
        errs.append(np.max(np.abs(v - I_C * (1.0 - np.exp(-t / TAU)))))
    # forward Euler: first order, error ~ 0.06 * I * dt here
    for coarse, fine in zip(errs[:-1], errs[1:]):
        assert 0.45 < fine / coarse < 0.55, errs
    assert errs[-1] < 0.1 * I_C * DTS[-1], errs


def test_flif_steady_state_and_slow_approach():
    """Both models reach U = I, but f-LIF's residual I - U decays like t^-alpha."""
    alpha, dt, T = 0.5, 1.0, 2000
    v = subthreshold(FractionalLIF, np.full(T, I_C), alpha=alpha, tau=TAU, dt=dt)
    t = grid(T, dt)
    resid = I_C - v
    assert np.all(resid[100:] > 0) and np.all(np.diff(resid[100:]) < 0)
    # Tail E_alpha(-t^alpha/tau) ~ tau / (Gamma(1-alpha) t^alpha)
    asym = I_C * TAU / (math.gamma(1 - alpha) * t**alpha)
    assert np.allclose(resid[-1], asym[-1], rtol=0.05)
    assert abs(loglog_slope(t[1000:], resid[1000:]) + alpha) < 0.05
    # while the exponential residual is gone to machine precision long before
    v1 = subthreshold(FractionalLIF, np.full(T, I_C), alpha=1.0, tau=TAU, dt=dt)
    assert abs(I_C - v1[200]) < 1e-12
    assert resid[200] > 1e-2


# ---------------------------------------------------------------------------------------
# 2. Theorem 2: robustness of the f-IF neuron
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.2, 0.5, 0.8, 1.0])
@pytest.mark.parametrize("dt,tau", [(1.0, 1.0), (0.1, 2.0), (0.37, 0.5)])
def test_fif_constant_input_is_exact_power_law(alpha, dt, tau):
    T, I = 500, 0.3
    t = grid(T, dt)
    v = subthreshold(FractionalIF, np.full(T, I), alpha=alpha, tau=tau, dt=dt)
    exact = I * t**alpha / (tau * math.gamma(alpha + 1))
    np.testing.assert_allclose(v, exact, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("alpha", [0.3, 0.5, 0.8])
def test_fif_perturbation_is_linear_and_grows_as_t_alpha(alpha):
    T, dt, tau, I = 1000, 0.5, 1.5, 0.4
    t = grid(T, dt)
    base = subthreshold(FractionalIF, np.full(T, I), alpha=alpha, tau=tau, dt=dt)
    deltas = []
    for eps in (1e-3, 4e-3, -2e-3):
        pert = subthreshold(FractionalIF, np.full(T, I + eps), alpha=alpha, tau=tau, dt=dt)
        deltas.append((pert - base) / eps)
    # linear in eps: the normalised response does not depend on eps
    for d in deltas[1:]:
        np.testing.assert_allclose(d, deltas[0], rtol=1e-6)
    d = deltas[0]
    # Delta U(t) = eps t^alpha / (tau Gamma(alpha + 1))
    np.testing.assert_allclose(d, t**alpha / (tau * math.gamma(alpha + 1)), rtol=1e-6)
    # log-log slope of the perturbation trace is alpha (sub-linear growth)
    assert abs(loglog_slope(t, d) - alpha) < 1e-6
    # the integer-order IF accumulates the same perturbation linearly, i.e. much more
    base1 = subthreshold(FractionalIF, np.full(T, I), alpha=1.0, tau=tau, dt=dt)
    pert1 = subthreshold(FractionalIF, np.full(T, I + 1e-3), alpha=1.0, tau=tau, dt=dt)
    d1 = (pert1 - base1) / 1e-3
    assert abs(loglog_slope(t, d1) - 1.0) < 1e-6
    ratio = d / d1  # = t^(alpha-1) / Gamma(alpha+1): the fractional neuron accumulates less and less
    assert np.all(np.diff(ratio) < 0) and ratio[-1] < 0.5


@pytest.mark.parametrize("alpha", [0.3, 0.7])
def test_fif_perturbation_growth_exponent_holds_for_gl(alpha):
    """The gl scheme is not exact, but the perturbation still grows as ~t^alpha."""
    T, dt, tau = 1000, 0.5, 1.0
    t = grid(T, dt)
    base = subthreshold(FractionalIF, np.full(T, 0.5), alpha=alpha, tau=tau, dt=dt, method="gl")
    pert = subthreshold(FractionalIF, np.full(T, 0.501), alpha=alpha, tau=tau, dt=dt, method="gl")
    d = (pert - base) / 1e-3
    assert abs(loglog_slope(t[100:], d[100:]) - alpha) < 5e-3
    np.testing.assert_allclose(d[100:], t[100:] ** alpha / (tau * math.gamma(alpha + 1)), rtol=1e-2)


# ---------------------------------------------------------------------------------------
# 3. Power-law decay of the memory kernel
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["pred", "gl"])
@pytest.mark.parametrize("alpha", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_kernel_decays_as_m_to_alpha_minus_one(alpha, method):
    steps = 10001
    b = history_kernel(method, alpha, steps, dt=1.0, dtype=torch.float64)
    assert b.shape == (steps,) and b.dtype == torch.float64
    b = b.numpy()
    assert np.all(b > 0) and np.all(np.diff(b) < 0)  # positive, monotone fading memory
    m = np.unique(np.geomspace(100, 10000, 200).astype(int))
    slope = loglog_slope(m, b[m])
    assert abs(slope - (alpha - 1.0)) < 5e-3, slope
    # amplitude: b_m ~ m^(alpha-1) / Gamma(alpha)
    np.testing.assert_allclose(b[10000] * math.gamma(alpha) / 10000 ** (alpha - 1), 1.0, rtol=1e-3)


@pytest.mark.parametrize("method", ["pred", "gl"])
@pytest.mark.parametrize("alpha", [0.4, 1.0])
def test_kernel_scales_as_dt_to_alpha(alpha, method):
    b1 = history_kernel(method, alpha, 50, dt=1.0, dtype=torch.float64)
    b2 = history_kernel(method, alpha, 50, dt=0.05, dtype=torch.float64)
    torch.testing.assert_close(b2, b1 * 0.05**alpha, rtol=1e-12, atol=0)


@pytest.mark.parametrize("alpha", [0.25, 0.6, 1.0])
def test_pred_kernel_closed_form(alpha):
    steps, dt = 64, 0.3
    m = np.arange(steps, dtype=np.float64)
    expected = dt**alpha * ((m + 1) ** alpha - m**alpha) / math.gamma(alpha + 1)
    b = history_kernel("pred", alpha, steps, dt=dt, dtype=torch.float64).numpy()
    np.testing.assert_allclose(b, expected, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# 4. alpha = 1 collapses to the first-order model
# ---------------------------------------------------------------------------------------


def euler_lif(
    x: np.ndarray, tau: float, leak: bool = True, threshold: float = NO_SPIKE, reset: str = "soft", v_reset: float = 0.0
):
    u, us, ss = 0.0, [], []
    for xk in x:
        u = ((1.0 - 1.0 / tau) * u if leak else u) + xk / tau
        s = float(u >= threshold)
        if s:
            u = u - threshold if reset == "soft" else v_reset
        us.append(u)
        ss.append(s)
    return np.array(ss), np.array(us)


@pytest.mark.parametrize("tau", [2.0, 3.5])
def test_alpha_one_lif_is_euler_recursion(tau):
    rng = np.random.default_rng(0)
    x = rng.normal(0.2, 1.0, size=300)
    v = subthreshold(FractionalLIF, x, alpha=1.0, tau=tau, dt=1.0)
    _, ref = euler_lif(x, tau)
    np.testing.assert_allclose(v, ref, rtol=0, atol=1e-12)


def test_alpha_one_if_is_running_sum():
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.0, size=300)
    v = subthreshold(FractionalIF, x, alpha=1.0, tau=1.0, dt=1.0)
    np.testing.assert_allclose(v, np.cumsum(x), rtol=0, atol=1e-12)


@pytest.mark.parametrize("reset", ["soft", "hard"])
def test_alpha_one_lif_with_spikes_matches_euler_with_reset(reset):
    rng = np.random.default_rng(2)
    x = rng.uniform(0.0, 1.6, size=200)
    tau, theta = 2.0, 1.0
    s, v = simulate(FractionalLIF, x, alpha=1.0, tau=tau, dt=1.0, threshold=theta, reset=reset)
    s_ref, v_ref = euler_lif(x, tau, threshold=theta, reset=reset)
    assert s_ref.sum() > 20  # the comparison is not vacuous
    np.testing.assert_array_equal(s, s_ref)
    np.testing.assert_allclose(v, v_ref, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------
# 5. Power-law vs exponential memory after a single input pulse
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.3, 0.5, 0.8])
def test_pulse_response_decays_algebraically(alpha):
    T, dt, tau = 2000, 1.0, 2.0
    x = np.zeros(T)
    x[0] = 1.0
    t = grid(T, dt)
    v = subthreshold(FractionalLIF, x, alpha=alpha, tau=tau, dt=dt)
    v1 = subthreshold(FractionalLIF, x, alpha=1.0, tau=tau, dt=dt)

    tail = slice(99, T)  # t >= 100
    assert np.all(v[tail] > 0), "the memory of the pulse stays positive"
    # exponential memory: (1 - 1/tau)^k, gone after ~100 steps
    np.testing.assert_allclose(v1[:50], (1.0 / tau) * (1.0 - 1.0 / tau) ** np.arange(50), rtol=1e-10)
    assert np.all(np.abs(v1[tail]) < 1e-15)  # round-off level (exact value < 1e-30)
    assert v[99] > 1e-6 and v[-1] > 1e-9 and np.all(v[tail] > 1e6 * np.abs(v1[tail]))
    # algebraic tail: roughly constant log-log slope, close to -(1 + alpha)
    s1 = loglog_slope(t[99:400], v[99:400])
    s2 = loglog_slope(t[400:T], v[400:T])
    assert abs(s1 - s2) < 0.1, (s1, s2)
    assert abs(s2 + 1.0 + alpha) < 0.1, s2
    # doubling time shrinks the response by a fixed factor (2^slope), not by exp(-t/tau)
    ratios = v[2 * np.array([200, 400, 800]) - 1] / v[np.array([200, 400, 800]) - 1]
    assert np.all((ratios > 2.0 ** (-2.2)) & (ratios < 2.0 ** (-1.1))), ratios


def test_pulse_memory_is_longer_for_smaller_alpha():
    T, tau = 1000, 2.0
    x = np.zeros(T)
    x[0] = 1.0
    tails = [subthreshold(FractionalLIF, x, alpha=a, tau=tau)[-1] for a in (0.3, 0.5, 0.8)]
    assert tails[0] > tails[1] > tails[2] > 0


@pytest.mark.parametrize("method", ["pred", "gl"])
@pytest.mark.parametrize("alpha", [0.3, 0.7])
def test_soe_engine_keeps_the_power_law_memory(alpha, method):
    """The fast sum-of-exponentials engine must not turn the algebraic tail into an exponential one."""
    T, tau = 1200, 2.0
    x = np.zeros(T)
    x[0] = 1.0
    t = grid(T, 1.0)
    v_direct = subthreshold(FractionalLIF, x, alpha=alpha, tau=tau, method=method, engine="direct")
    v_soe = subthreshold(FractionalLIF, x, alpha=alpha, tau=tau, method=method, engine="soe")
    np.testing.assert_allclose(v_soe[99:], v_direct[99:], rtol=1e-3)
    assert abs(loglog_slope(t[299:], v_soe[299:]) - loglog_slope(t[299:], v_direct[299:])) < 1e-3
    # and the Mittag-Leffler relaxation under constant input
    c_direct = subthreshold(FractionalLIF, np.full(T, I_C), alpha=alpha, tau=tau, method=method, engine="direct")
    c_soe = subthreshold(FractionalLIF, np.full(T, I_C), alpha=alpha, tau=tau, method=method, engine="soe")
    np.testing.assert_allclose(I_C - c_soe, I_C - c_direct, rtol=1e-4)
