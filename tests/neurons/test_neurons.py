"""FractionalLIF / FractionalIF: equivalence, conventions, gradients, engines, bad input."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from reference import fsnn_neuron, spikede_neuron
from spikingjelly.activation_based import neuron as sj_neuron, surrogate as sj_surrogate

from fsnn import (
    FractionalIF,
    FractionalLIF,
    build_neuron,
    collect_alphas,
    history_kernel,
)
from fsnn.neurons.engines import EngineConfig, FractionalNeuronFunction
from fsnn.neurons.memory import soe_bank, stable_tau
from fsnn.neurons.surrogate import SURROGATES

torch.set_num_threads(1)


def currents(T=40, shape=(3, 17), seed=0, dtype=torch.float64, mean=0.6, std=1.3):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(T, *shape, generator=g, dtype=dtype) * std + mean


def fixed(m):
    """Make the module's constants exact in float64 (learnable raw params are float32)."""
    return m.double()


# ---------------------------------------------------------------------------------------------
# alpha = 1 is SpikingJelly, spike for spike, membrane and gradients


@pytest.mark.parametrize("reset", ["hard", "soft"])
@pytest.mark.parametrize("kind", ["lif", "if"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("engine", ["direct", "soe"])
def test_alpha_one_equals_spikingjelly(reset, kind, dtype, engine):
    T = 96  # > 2 blocks, so the SOE engine really uses its state
    x = currents(T=T, dtype=dtype)
    sur = sj_surrogate.Sigmoid(alpha=4.0)
    v_reset = 0.0 if reset == "hard" else None
    if kind == "lif":
        ref = sj_neuron.LIFNode(
            tau=2.5,
            v_threshold=1.0,
            v_reset=v_reset,
            decay_input=True,
            surrogate_function=sur,
            step_mode="m",
            store_v_seq=True,
        )
        ours = FractionalLIF(alpha=1.0, tau=2.5, reset=reset, surrogate_scale=4.0, engine=engine)
    else:
        ref = sj_neuron.IFNode(
            v_threshold=1.0, v_reset=v_reset, surrogate_function=sur, step_mode="m", store_v_seq=True
        )
        ours = FractionalIF(alpha=1.0, reset=reset, surrogate_scale=4.0, engine=engine)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    s_ref = ref(xa)
    v_ref = ref.v_seq
    s, v = ours(xb, return_state=True)
    assert ours.last_engine == engine
    w = currents(T=T, seed=1, dtype=dtype)
    ((s_ref * w).sum() + (v_ref * w).sum()).backward()
    ((s * w).sum() + (v * w).sum()).backward()
    assert torch.equal(s, s_ref)
    assert s.sum() > 0.1 * s.numel()  # the comparison is not vacuous
    tol = 1e-12 if dtype == torch.float64 else 1e-6
    assert (v - v_ref).abs().max() <= tol * 10
    scale = xa.grad.abs().max()
    assert ((xb.grad - xa.grad).abs().max() / scale) <= (1e-12 if dtype == torch.float64 else 2e-6)


def test_alpha_one_detach_reset_and_arctan_match_spikingjelly():
    x = currents(T=30)
    ref = sj_neuron.LIFNode(
        tau=3.0,
        v_reset=0.0,
        detach_reset=True,
        step_mode="m",
        surrogate_function=sj_surrogate.ATan(alpha=2.0),
        store_v_seq=True,
    )
    ours = FractionalLIF(alpha=1.0, tau=3.0, reset="hard", detach_reset=True, surrogate="arctan")
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ref(xa).sum().backward()
    ours(xb).sum().backward()
    torch.testing.assert_close(xb.grad, xa.grad, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# the fsnn convention against the literal equations (forward and every gradient)


CASES = list(itertools.product(["pred", "gl", "l1"], ["soft", "hard"], [False, True], [True, False]))


@pytest.mark.parametrize("method,reset,detach,leak", CASES)
def test_engines_match_literal_equations(method, reset, detach, leak):
    T, dt, v_reset = 40, 0.5, 0.2
    x = currents(T=T, shape=(2, 9))
    alpha = torch.tensor(0.6, dtype=torch.float64, requires_grad=True)
    tau = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    theta = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    xr = x.clone().requires_grad_()
    s0, v0 = fsnn_neuron(
        xr,
        history_kernel(method, alpha, T, dt),
        tau=tau,
        theta=theta,
        leak=leak,
        reset=reset,
        v_reset=v_reset,
        detach_reset=detach,
    )
    w = currents(T=T, shape=(2, 9), seed=5)
    ((s0 * w).sum() + (v0 * w).sum()).backward()
    cls = FractionalLIF if leak else FractionalIF
    for engine in ["direct", "soe"] if method != "l1" else ["direct"]:
        m = cls(
            alpha=0.6, tau=2.0, reset=reset, v_reset=v_reset, dt=dt, method=method, engine=engine, detach_reset=detach
        )
        m.block = 8  # several blocks and a live SOE state at T = 40
        x1 = x.clone().requires_grad_()
        k_alpha = torch.tensor(0.6, dtype=torch.float64, requires_grad=True)
        tau1 = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
        theta1 = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
        s1, v1 = _run_function(m, x1, k_alpha, tau1, theta1)
        ((s1 * w).sum() + (v1 * w).sum()).backward()
        assert torch.equal(s1, s0)
        torch.testing.assert_close(v1, v0, rtol=0, atol=1e-10 if engine == "direct" else 1e-6)
        torch.testing.assert_close(x1.grad, xr.grad, rtol=1e-8, atol=1e-9 if engine == "direct" else 1e-5)
        torch.testing.assert_close(tau1.grad, tau.grad, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(theta1.grad, theta.grad, rtol=1e-6, atol=1e-6)
        rtol_alpha = 1e-7 if engine == "direct" else 2e-3  # the SOE differentiates its own kernel
        torch.testing.assert_close(k_alpha.grad, alpha.grad, rtol=rtol_alpha, atol=1e-6)


def _run_function(m, x, alpha, tau, theta):
    """Drive the engine Function with explicit alpha/tau/theta tensors (what the module does)."""
    T = x.shape[0]
    flat = x.reshape(T, -1)
    engine, bank = m.resolve_engine(T, float(alpha.detach()))
    assert m.engine in ("auto", engine)
    if bank is None:
        length = T if m.memory is None else min(T, m.memory + 1)
        k_head = history_kernel(m.method, alpha, length, m.dt)
        soe_w, decays = flat.new_zeros(0), None
    else:
        k_head = history_kernel(m.method, alpha, bank.head, m.dt)
        soe_w, decays = bank.weights(alpha), bank.decays(flat)
    cfg = EngineConfig(
        leak=m.leak,
        reset=m.reset_mode,
        v_reset=m.v_reset,
        detach_reset=m.detach_reset,
        surrogate=m.surrogate,
        surrogate_scale=m.surrogate_scale,
        block=m.block,
        memory=m.memory,
        decays=decays,
    )
    s, v = FractionalNeuronFunction.apply(flat, tau, theta, k_head, soe_w, cfg)
    return s.reshape(x.shape), v.reshape(x.shape)


@pytest.mark.parametrize("surrogate", SURROGATES)
def test_every_surrogate_backward_matches_autograd(surrogate):
    x = currents(T=24, shape=(4,))
    kernel = history_kernel("pred", 0.4, 24)
    xr, x1 = x.clone().requires_grad_(), x.clone().requires_grad_()
    scale = {"sigmoid": 3.0, "arctan": 1.5, "piecewise_linear": 0.8, "gaussian": 0.7}[surrogate]
    fsnn_neuron(xr, kernel, tau=2.0, theta=1.0, surrogate=surrogate, scale=scale)[0].sum().backward()
    m = FractionalLIF(alpha=0.4, surrogate=surrogate, surrogate_scale=scale)
    m(x1).sum().backward()
    assert xr.grad.abs().sum() > 0
    torch.testing.assert_close(x1.grad, xr.grad, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# gradcheck of the Function: a surrogate that is exactly zero away from the threshold makes the
# finite-difference Jacobian of the (piecewise smooth) map the true one


@pytest.mark.parametrize(
    "method,engine,reset",
    [
        (m, e, r)
        for m in ["pred", "gl", "l1"]
        for e in ["direct", "soe", "window"]
        for r in ["soft", "hard"]
        if not (m == "l1" and e == "soe")
    ],
)
def test_gradcheck(method, engine, reset):
    T, block = 26, 6
    x = currents(T=T, shape=(3,), seed=11, std=0.6, mean=1.4)
    m = FractionalLIF(
        alpha=0.55,
        tau=1.7,
        reset=reset,
        v_reset=-0.1,
        dt=0.7,
        method=method,
        engine="direct" if engine == "window" else engine,
        memory=5 if engine == "window" else None,
        surrogate="piecewise_linear",
        surrogate_scale=1e-4,
    )
    m.block = block
    alpha, tau, theta = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (0.55, 1.7, 1.0))

    def fn(x_, a_, t_, th_):
        return _run_function(m, x_, a_, t_, th_)

    s, _ = fn(x, alpha, tau, theta)
    assert 0 < s.sum() < s.numel()
    assert torch.autograd.gradcheck(fn, (x.requires_grad_(), alpha, tau, theta), eps=1e-7, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# engines agree; window semantics; SOE accuracy


@pytest.mark.parametrize("method", ["pred", "gl"])
@pytest.mark.parametrize("alpha", [0.2, 0.5, 0.9])
def test_soe_agrees_with_direct(method, alpha):
    x = currents(T=300, shape=(2, 16), dtype=torch.float64)
    out = {}
    for engine in ["direct", "soe"]:
        m = FractionalLIF(alpha=alpha, method=method, engine=engine)
        out[engine] = m(x, return_state=True)
    torch.testing.assert_close(out["soe"][1], out["direct"][1], rtol=0, atol=1e-5)
    mismatch = (out["soe"][0] != out["direct"][0]).float().mean()
    assert mismatch < 1e-3  # a spike may only flip where the potential sits within 1e-5 of theta


def test_soe_bank_is_verified_against_the_exact_kernel():
    for method, alpha, horizon in [("pred", 0.3, 4096), ("gl", 0.8, 700), ("pred", 1.0, 100)]:
        bank = soe_bank(method, alpha, horizon, 1.0, 33, 1e-6)
        lags = torch.arange(33, horizon, dtype=torch.float64)
        exact = history_kernel(method, alpha, horizon)[33:]
        err = ((bank.kernel(torch.tensor(alpha, dtype=torch.float64), lags) - exact).abs() / exact).max()
        assert err <= 1e-6 and math.isclose(err.item(), bank.error, rel_tol=1e-6)
        assert bank.size <= 30
    assert soe_bank("pred", 1.0, 100, 1.0, 33, 1e-6).size == 1
    assert soe_bank("l1", 0.5, 100, 1.0, 33, 1e-6) is None


def test_window_equals_truncated_sum_and_full_window_equals_direct():
    x = currents(T=30, shape=(5,))
    kernel = history_kernel("gl", 0.35, 30)
    s0, v0 = fsnn_neuron(x, kernel, tau=2.0, theta=1.0, memory=4)
    m = FractionalLIF(alpha=0.35, method="gl", memory=4)
    m.block = 8
    s1, v1 = m(x, return_state=True)
    assert torch.equal(s1, s0)
    torch.testing.assert_close(v1, v0, rtol=0, atol=1e-12)
    full = FractionalLIF(alpha=0.35, method="gl", memory=30)(x, return_state=True)
    direct = FractionalLIF(alpha=0.35, method="gl", engine="direct")(x, return_state=True)
    torch.testing.assert_close(full[1], direct[1], rtol=0, atol=1e-12)
    assert not torch.allclose(v1, direct[1])  # a window of 4 really forgets


def test_auto_engine_choice_of_the_torch_engines(monkeypatch):
    monkeypatch.setenv("FSNN_CPU_KERNELS", "0")  # the compiled CPU loops (test_cpu_kernels.py) off
    m = FractionalLIF(alpha=0.5)
    m(currents(T=16, dtype=torch.float32))
    assert m.last_engine == "direct"
    m(currents(T=300, dtype=torch.float32))
    assert m.last_engine == "soe"
    FractionalLIF(alpha=0.5, method="l1")(currents(T=300))
    w = FractionalLIF(alpha=0.5, memory=8)
    w(currents(T=300))
    assert w.last_engine == "direct"


# ---------------------------------------------------------------------------------------------
# spikeDE convention


@pytest.mark.parametrize("method", ["pred", "gl"])
@pytest.mark.parametrize("leak", [True, False])
@pytest.mark.parametrize("alpha", [0.3, 0.8, 1.0])
def test_spikede_convention_reproduces_the_toolbox_update(method, leak, alpha):
    x = currents(T=32, shape=(4, 8), seed=3, mean=0.7)
    s0, v0 = spikede_neuron(x, alpha, tau=2.0, theta=1.0, leak=leak, method=method)
    cls = FractionalLIF if leak else FractionalIF
    m = cls(alpha=alpha, tau=2.0, method=method, convention="spikede")
    s1, v1 = m(x, return_state=True)
    assert torch.equal(s1, s0)
    torch.testing.assert_close(v1, v0, rtol=1e-9, atol=1e-10)


def test_spikede_differs_from_fsnn_at_alpha_one():
    x = currents(T=64, shape=(32, 8), seed=4)
    a = FractionalLIF(alpha=1.0, reset="hard", convention="spikede")(x)
    b = FractionalLIF(alpha=1.0, reset="hard")(x)
    assert (a != b).any()  # the official f-LIF is not SpikingJelly's LIF at alpha = 1


# ---------------------------------------------------------------------------------------------
# learnable parameters


def test_learnable_alpha_tau_threshold_stay_in_range_and_learn():
    torch.manual_seed(0)
    m = FractionalLIF(alpha=0.5, learn_alpha=True, learn_tau=True, learn_threshold=True)
    opt = torch.optim.SGD(m.parameters(), lr=50.0)
    x = currents(T=20, shape=(8, 4), dtype=torch.float32)
    before = float(m.alpha.detach())
    for _ in range(5):
        opt.zero_grad()
        m(x).mean().backward()
        assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in m.parameters())
        opt.step()
        assert 0 < float(m.alpha.detach()) <= 1 and float(m.tau.detach()) > 0 and float(m.threshold.detach()) > 0
    assert float(m.alpha.detach()) != before
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), m, FractionalIF(alpha=0.3))
    assert collect_alphas(net) == pytest.approx({"1": float(m.alpha.detach()), "2": 0.3})


def test_alpha_gradient_flows_through_gamma_functions():
    # dV/dalpha of a subthreshold f-IF at constant input: V_k = I t_k^a / (tau Gamma(a+1))
    a = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    m = FractionalIF(alpha=0.4, threshold=1e6, dt=0.5)
    x = torch.full((10, 1), 0.3, dtype=torch.float64)
    _, v = _run_function(m, x, a, torch.tensor(1.0, dtype=torch.float64), torch.tensor(1e6, dtype=torch.float64))
    v[-1].sum().backward()
    t = 10 * 0.5
    exact = (
        0.3
        * t**0.4
        / math.gamma(1.4)
        * (math.log(t) - torch.special.digamma(torch.tensor(1.4, dtype=torch.float64)).item())
    )
    assert a.grad.item() == pytest.approx(exact, rel=1e-9)


# ---------------------------------------------------------------------------------------------
# shapes, dtypes, registry, bad input


def test_shapes_dtypes_and_no_state_between_calls():
    m = FractionalLIF(alpha=0.5)
    x = torch.rand(6, 2, 3, 4, 4) * 2
    y = m(x)
    assert y.shape == x.shape and y.dtype == x.dtype
    assert torch.equal(m(x), y)  # nothing carried over
    half = m(x.to(torch.bfloat16))
    assert half.dtype == torch.bfloat16 and torch.equal(half.float(), m(x.to(torch.bfloat16).float()))


def test_build_neuron_registry():
    assert isinstance(build_neuron("flif", alpha=0.3), FractionalLIF)
    assert isinstance(build_neuron("fif", alpha=0.3), FractionalIF)
    lif = build_neuron("lif", tau=2.0)
    assert isinstance(lif, FractionalLIF) and float(lif.alpha) == 1.0
    if_ = build_neuron("if")
    assert isinstance(if_, FractionalIF) and float(if_.alpha) == 1.0 and float(if_.tau) == 1.0
    with pytest.raises(ValueError, match="neuron must be one of"):
        build_neuron("nope")
    with pytest.raises(ValueError, match="alpha"):
        build_neuron("lif", alpha=0.5)
    with pytest.raises(ValueError, match=r"'if' does not take \['learn_alpha'\]"):
        build_neuron("if", learn_alpha=True)
    with pytest.raises(ValueError, match="did you mean 'flif'"):
        build_neuron("flf")


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"tau": 0}, "tau"),
        ({"tau": -1}, "tau"),
        ({"threshold": 0}, "threshold"),
        ({"memory": 0}, "memory"),
        ({"memory": 2.5}, "memory"),
        ({"method": "euler"}, "method"),
        ({"engine": "fft"}, "engine"),
        ({"surrogate": "relu"}, "surrogate"),
        ({"surrogate_scale": -1}, "surrogate_scale"),
        ({"reset": "zero"}, "reset"),
        ({"dt": 0}, "dt"),
        ({"convention": "x"}, "convention"),
        ({"engine": "soe", "memory": 4}, "soe"),
        ({"engine": "soe", "method": "l1"}, "soe"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        FractionalLIF(**kwargs)


@pytest.mark.parametrize(
    "method,alpha,dt,memory,bound",
    [
        ("pred", 1.0, 1.0, None, 0.5),
        ("gl", 0.5, 1.0, None, 0.5**0.5),
        ("gl", 0.3, 0.1, None, 0.05**0.3),
        ("pred", 0.5, 1.0, None, None),
        ("l1", 0.3, 1.0, None, None),
        ("pred", 0.7, 1.0, 3, None),
    ],
)
def test_tau_is_refused_where_the_dynamics_blow_up_and_works_just_above(method, alpha, dt, memory, bound):
    # explicit Euler is stable for dt / tau < 2; gl's bound is (dt / 2)^alpha in closed form (history.stable_tau)
    found = stable_tau(method, alpha, dt, memory)
    if bound is not None:
        assert found == pytest.approx(bound, rel=1e-9)
    options = {"alpha": alpha, "dt": dt, "method": method, "memory": memory}
    for tau in (1e-9, found * 0.99, found):
        with pytest.raises(ValueError, match=rf"tau must be a number > {found:.6g} \(.*alpha={alpha:g}"):
            FractionalLIF(tau=tau, **options)
    x = torch.randn(600, 2, 3, dtype=torch.float64, requires_grad=True)
    for convention in ("fsnn", "spikede"):
        # the toolbox's window is one lag shorter (lags 0 .. memory - 1)
        at = found if memory is None or convention == "fsnn" else stable_tau(method, alpha, dt, memory - 1)
        neuron = FractionalLIF(tau=at * 1.02, convention=convention, **options)
        spikes, v = neuron(x[:200] if convention == "spikede" else x, return_state=True)  # its loop is slow
        (spikes.sum() + v.sum()).backward()
        assert torch.isfinite(v).all() and torch.isfinite(x.grad).all() and v.abs().max() < 1e6
        x.grad = None
    if memory is None:  # below the bound the membrane grows until it overflows: the bound is where it starts
        neuron = FractionalLIF(tau=found * 1.02, **options)
        with pytest.raises(ValueError, match=rf"tau must be a number > {found:.6g}"):
            neuron.tau = found * 0.8  # an assignment is checked as the constructor's argument is
        neuron.__dict__["tau_value"] = found * 0.8  # past the check, to see what it guards against
        assert not torch.isfinite(neuron(x.detach().float(), return_state=True)[1]).all()
    assert FractionalIF(tau=1e-9, alpha=alpha, dt=dt)(x.detach()).isfinite().all()  # no leak: no bound


def test_meta_tensors_are_refused_by_name():
    with pytest.raises(ValueError, match="meta device is not supported by FractionalLIF"):
        FractionalLIF()(torch.ones(4, 2, 3, device="meta"))


@pytest.mark.parametrize(
    "x,match",
    [
        (torch.ones(5), "rank"),
        (torch.ones(3, 2, dtype=torch.long), "floating"),
        (torch.tensor([[1.0, float("nan")]]), "NaN"),
        (torch.tensor([[float("inf")]]), "NaN or inf"),
        (torch.tensor([[float("inf"), -float("inf")], [1.0, 2.0]]), "NaN or inf"),
    ],
)
def test_bad_input_is_a_clear_error(x, match):
    with pytest.raises(ValueError, match=match):
        FractionalLIF()(x)


def test_finite_input_whose_sum_overflows_is_accepted():
    """The finiteness check first looks at the sum: finite entries whose float32 sum is infinite still pass."""
    x = torch.full((4, 3), 3e38)
    assert not torch.isfinite(x.sum())
    assert FractionalLIF()(x).shape == (4, 3)


def test_a_neuron_builds_on_the_meta_device_with_nothing_cached_yet():
    # a network built on "meta" (shapes and names without memory or weights) must not trip the stability bound or
    # poison its caches
    stable_tau.cache_clear()
    with torch.device("meta"):
        FractionalLIF(alpha=0.43, tau=2.0)
        assert stable_tau("l1", 0.43, 1.0, None) > 0
    assert FractionalLIF(alpha=0.43, tau=2.0)(torch.ones(4, 1, 2)).shape == (4, 1, 2)  # nothing cached on "meta"
