"""The neuron's parameters stay in their domain, however they are set: a learned tau (or a fixed one under a learned
alpha) never crosses the stability bound of :func:`fsnn.neurons.memory.stable_tau`, a learned alpha stays in its
range and a learned threshold above its floor; a state dict, an assignment or a NaN raw parameter outside the domain
is one ``ValueError`` naming the parameter; a dtype cast never rounds alpha; a NaN/inf parameter after an optimiser
step stops training in one line that names it."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from fsnn import FractionalIF, FractionalLIF
from fsnn.neurons.fractional import LEARNED_ALPHA, LEARNED_THRESHOLD, MAX_MEMORY, inverse_softplus
from fsnn.neurons.memory import stable_tau
from fsnn.neurons.registry import NEURONS


def drive(T=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(T, 4, 8, generator=g) * 2


def test_a_learned_tau_pushed_below_the_bound_is_held_above_it():
    m = FractionalLIF(alpha=0.5, tau=0.9, learn_tau=True)
    bound = stable_tau("pred", 0.5)
    with torch.no_grad():
        m.tau_raw.fill_(inverse_softplus(0.5))  # where an optimiser step with a large rate can take it
    assert bound < float(m.tau.detach()) <= bound * (1 + 2e-6)
    _, v = m(drive(), return_state=True)
    assert torch.isfinite(v).all()


def test_a_fixed_tau_stays_above_the_bound_of_a_learned_alpha():
    m = FractionalLIF(alpha=0.9, tau=0.9, learn_alpha=True)  # valid at alpha 0.9 (bound 0.575), not at 0.1 (1.003)
    with torch.no_grad():
        m.alpha_raw.fill_(math.log(0.1 / 0.9))
    assert float(m.tau.detach()) > stable_tau("pred", float(m.alpha.detach())) > 0.9
    _, v = m(drive(), return_state=True)
    assert torch.isfinite(v).all()


def test_above_the_bound_tau_and_its_gradient_are_exactly_the_softplus():
    m = FractionalLIF(alpha=0.5, tau=1.3, learn_tau=True)
    m.tau.backward()
    raw = m.tau_raw.detach().clone().requires_grad_()
    nn.functional.softplus(raw).backward()
    assert torch.equal(m.tau.detach(), nn.functional.softplus(raw).detach()) and torch.equal(m.tau_raw.grad, raw.grad)


@pytest.mark.parametrize("sign, moves", [(1.0, False), (-1.0, True)], ids=["outwards", "inwards"])
def test_at_the_bound_only_a_gradient_back_inside_passes(sign, moves):
    m = FractionalLIF(alpha=0.5, tau=0.9, learn_tau=True)
    with torch.no_grad():
        m.tau_raw.fill_(inverse_softplus(0.5))
    (sign * m.tau).backward()  # descent on +tau would lower tau further; on -tau it raises it
    assert (m.tau_raw.grad != 0) == moves


@pytest.mark.parametrize("raw", [-1000.0, 1000.0])
def test_a_learned_alpha_stays_in_its_range(raw):
    m = FractionalLIF(alpha=0.5, method="gl", learn_alpha=True)
    with torch.no_grad():
        m.alpha_raw.fill_(raw)  # float64's sigmoid is exactly 0 or 1 there
    assert LEARNED_ALPHA[0] <= float(m.alpha.detach()) <= LEARNED_ALPHA[1]
    assert 0 < LEARNED_ALPHA[0] and LEARNED_ALPHA[1] < 1
    _, v = m(drive(T=40), return_state=True)
    assert torch.isfinite(v).all()


def test_a_learned_threshold_pushed_to_zero_is_held_at_its_floor():
    m = FractionalLIF(threshold=0.8, learn_threshold=True)
    with torch.no_grad():
        m.theta_raw.fill_(-200.0)  # softplus is exactly 0 there in float32: a threshold of 0 fires at every step
    assert float(m.threshold.detach()) == pytest.approx(LEARNED_THRESHOLD * 0.8, rel=1e-6)
    assert not m(torch.zeros(30, 2, 3)).any()  # a neuron at rest does not fire
    with torch.no_grad():
        m.theta_raw.fill_(-15.0)  # below the floor, where softplus still has a gradient
    (m.threshold * 1.0).backward()  # descent would lower it further: held
    assert m.theta_raw.grad == 0
    m.zero_grad()
    (-m.threshold).backward()  # descent raises it: passes
    assert m.theta_raw.grad != 0


def test_above_its_floor_the_threshold_and_its_gradient_are_exactly_the_softplus():
    m = FractionalLIF(threshold=0.7, learn_threshold=True)
    m.threshold.backward()
    raw = m.theta_raw.detach().clone().requires_grad_()
    nn.functional.softplus(raw).backward()
    assert torch.equal(m.threshold.detach(), nn.functional.softplus(raw).detach())
    assert torch.equal(m.theta_raw.grad, raw.grad)


@pytest.mark.parametrize("alpha", [1.5, 0.0, -0.2, float("nan")])
def test_a_state_dict_with_alpha_outside_its_domain_is_refused(alpha):
    m = FractionalLIF(alpha=0.3)
    with pytest.raises(
        ValueError,
        match=rf"^alpha must be a number in \(0, 1\], got {alpha!r} \(state dict key "
        r"'alpha_value'\)$",
    ):
        m.load_state_dict({"alpha_value": torch.tensor(alpha, dtype=torch.float64)})
    assert float(m.alpha) == 0.3 and m._alpha_host == 0.3  # nothing was loaded


def test_a_state_dict_alpha_where_the_fixed_tau_is_unstable_is_refused():
    m = FractionalLIF(alpha=0.9, tau=0.7)  # above the bound at alpha 0.9 (0.575), below it at 0.05 (1.004)
    with pytest.raises(
        ValueError,
        match=r"^tau must be a number > 1.00387 .* got 0.7 \(at alpha=0.05, state dict key "
        r"'alpha_value'\)$",
    ):
        m.load_state_dict({"alpha_value": torch.tensor(0.05, dtype=torch.float64)})
    assert float(m.alpha) == 0.9


@pytest.mark.parametrize("name", ["alpha_raw", "tau_raw", "theta_raw"])
def test_a_non_finite_raw_parameter_is_refused_when_loaded_and_when_run(name):
    m = FractionalLIF(learn_alpha=True, learn_tau=True, learn_threshold=True)
    state = {**m.state_dict(), name: torch.tensor(float("nan"))}
    before = getattr(m, name).detach().clone()
    with pytest.raises(
        ValueError,
        match=rf"^{name} must be a finite number \(the learned .*\), got nan \(state dict "
        rf"key '{name}'\)$",
    ):
        m.load_state_dict(state)
    assert torch.equal(getattr(m, name).detach(), before)
    for options in ({"engine": "direct"}, {"engine": "auto"}, {"engine": "soe"}, {"convention": "spikede"}):
        m = FractionalLIF(learn_alpha=True, learn_tau=True, learn_threshold=True, **options)
        with torch.no_grad():
            getattr(m, name).fill_(float("nan"))  # what an optimiser step with a NaN gradient leaves
        with pytest.raises(ValueError, match=rf"^{name} must be a finite number \(the learned .*\), got nan$"):
            m(drive(T=12))


def test_an_assignment_is_checked_as_the_constructor_s_argument():
    m = FractionalLIF(alpha=0.5, tau=2.0)
    for name, value, message in [
        ("alpha", 1.5, r"alpha must be a number in \(0, 1\], got 1.5"),
        ("alpha_value", torch.tensor(0.0), r"alpha must be a number in \(0, 1\], got 0.0"),
        ("alpha", float("nan"), r"alpha must be a number in \(0, 1\], got nan"),
        ("tau", 0.1, r"tau must be a number > 0.857805"),
        ("tau_value", -1.0, r"tau must be a number > 0, got -1.0"),
        ("threshold", 0, r"threshold must be a number > 0, got 0"),
        ("threshold_value", float("inf"), r"threshold must be a number > 0, got inf"),
    ]:
        with pytest.raises(ValueError, match=message):
            setattr(m, name, value)
    assert (float(m.alpha), float(m.tau), float(m.threshold)) == (0.5, 2.0, 1.0)
    m.alpha, m.tau, m.threshold = 0.7, 3.0, 0.5
    assert (float(m.alpha), m._alpha_host, float(m.tau), float(m.threshold)) == (0.7, 0.7, 3.0, 0.5)
    assert m.alpha.dtype == torch.float64 and float(
        FractionalLIF(alpha=0.7, tau=3.0, threshold=0.5)(drive()).sum()
    ) == float(m(drive()).sum())  # the caches follow
    with pytest.raises(ValueError, match=r"tau must be a number > 1.00387 .*alpha=0.05"):
        FractionalLIF(alpha=0.9, tau=0.7).alpha = 0.05  # the stability bound of the fixed tau at the new alpha
    learned = FractionalLIF(learn_alpha=True, learn_tau=True, learn_threshold=True)
    learned.alpha, learned.tau, learned.threshold = 0.3, 1.5, 0.9
    assert float(learned.alpha.detach()) == pytest.approx(0.3) and float(learned.tau.detach()) == pytest.approx(1.5)
    assert float(learned.threshold.detach()) == pytest.approx(0.9)


@pytest.mark.parametrize("cast", ["half", "bfloat16", "float"])
def test_a_dtype_cast_keeps_alpha_and_the_raw_parameters_in_full_precision(cast):
    m = getattr(FractionalLIF(alpha=0.3), cast)()
    assert m.alpha.dtype == torch.float64 and float(m.alpha) == 0.3  # not 0.30005 (half) or 0.30078 (bfloat16)
    fresh = FractionalLIF(alpha=0.3)
    fresh.load_state_dict(m.state_dict())  # the round trip keeps it exact
    assert float(fresh.alpha) == 0.3 and fresh._alpha_host == 0.3
    x = drive(T=40).to(getattr(torch, cast if cast != "float" else "float32"))
    assert torch.equal(m(x), FractionalLIF(alpha=0.3)(x))  # the kernel is alpha 0.3's, in float32
    learned = getattr(FractionalLIF(alpha=0.3, learn_alpha=True, learn_tau=True, learn_threshold=True), cast)()
    assert {p.dtype for p in learned.parameters()} == {torch.float32}
    assert learned.double().alpha_raw.dtype == torch.float64  # a cast to a finer dtype is applied


def test_a_state_dict_of_a_rounded_copy_leaves_the_neuron_s_own_alpha():
    rounded = {"alpha_value": torch.tensor(0.3).half()}  # what a .half() copy saved before the cast kept alpha
    m = FractionalLIF(alpha=0.3)
    m.load_state_dict(rounded)
    assert float(m.alpha) == 0.3 and m._alpha_host == 0.3
    other = FractionalLIF(alpha=0.5)  # another alpha: the rounded value is all there is
    other.load_state_dict(rounded)
    assert float(other.alpha) == float(torch.tensor(0.3).half())


def test_a_window_longer_than_the_longest_is_refused_before_any_allocation():
    with pytest.raises(ValueError, match=rf"^memory must be an integer in \[1, {MAX_MEMORY}\], got 1000000000000$"):
        FractionalLIF(memory=10**12)
    schema = NEURONS.schema("flif")
    with pytest.raises(ValueError, match=r"an integer in \[1, 65536\]"):
        schema(memory=10**12)
    assert FractionalIF(memory=MAX_MEMORY)(drive(T=5)).shape == (5, 4, 8)  # the longest window runs
