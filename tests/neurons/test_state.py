"""Neurons run from a state (fsnn.neurons.state, fsnn.neurons.base, fsnn.neurons.stepping): chunks of any sizes give
the whole sequence's spikes, potentials and gradients, for every registered neuron and every kind of fractional
state; truncated BPTT, constant SOE memory, held single steps, SpikingJelly's functional helpers, tensor-like moves
and pickling, torch.compile, DDP and the errors of bad use."""

import pickle

import pytest
import torch
import torch.distributed as dist
from spikingjelly.activation_based import functional, layer, neuron as sj_neuron
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from fsnn.neurons import FractionalLIF, build_neuron, neuron_names
from fsnn.neurons.cpu_kernels import unavailable_reason as cpp_unavailable

T = 36
SHAPE = (2, 2, 3)  # one step's input [B, 2, 3]
CPP_REASON = cpp_unavailable()

#: (registered name, options): every registered neuron, and f-LIF with every kind of state and engine
VARIANTS = {name: (name, {}) for name in neuron_names()} | {
    "flif-direct": ("flif", dict(engine="direct")),
    "flif-soe": ("flif", dict(engine="soe")),
    "flif-cpp": ("flif", dict(engine="cpp")),
    "flif-auto": ("flif", dict(engine="auto")),
    "flif-window": ("flif", dict(engine="direct", memory=7)),
    "flif-spikede": ("flif", dict(convention="spikede")),
    "flif-hard": ("flif", dict(engine="direct", reset="hard", v_reset=-0.2)),
    "flif-learned": ("flif", dict(engine="soe", learn_alpha=True, learn_tau=True, learn_threshold=True)),
    "flif-gl": ("flif", dict(engine="auto", method="gl", reset="hard")),
    "flif-l1": ("flif", dict(engine="direct", method="l1")),
    "sj_lif-hard": ("sj_lif", dict(reset="hard", v_reset=-0.3)),
    "sj_if-hard": ("sj_if", dict(reset="hard")),
    "snntorch_leaky-hard": ("snntorch_leaky", dict(reset="hard")),
}
NO_CPP = pytest.mark.skipif(CPP_REASON is not None, reason=f"no compiled loops: {CPP_REASON}")
CASES = [pytest.param(case, id=key, marks=NO_CPP if key == "flif-cpp" else ()) for key, case in VARIANTS.items()]
CHUNKINGS = [(1,), (7,), (T,), (3, 1, 11, 2)]


def make(name: str, options: dict) -> nn.Module:
    torch.manual_seed(0)
    return build_neuron(name, **options).double()


def inputs(steps: int = T, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(steps, *SHAPE, generator=g, dtype=torch.float64) * 1.5 + 0.6
    return x.requires_grad_(), torch.randn(steps, *SHAPE, generator=g, dtype=torch.float64)


def soe_state(neuron) -> bool:
    return getattr(neuron, "_state_kind", lambda: None)() == "soe"


def initial(neuron, x_t, horizon=None):
    return neuron.initial_state(x_t) if horizon is None else neuron.initial_state(x_t, horizon=horizon)


def run_chunks(neuron, x, sizes, state, *, detach=False):
    """``(spikes, v, state)`` of ``x`` run in chunks of ``sizes`` (cycled) from ``state``; a size 1 is one step
    ``[B, ...]``; ``detach`` cuts the state at each boundary."""
    spikes, vs, t, k = [], [], 0, 0
    while t < x.shape[0]:
        size = sizes[k % len(sizes)]
        if size == 1:
            s, v, state = neuron(x[t], state, return_state=True)
            s, v = s[None], v[None]
        else:
            s, v, state = neuron(x[t : t + size], state, return_state=True)
        if detach:
            state = state.detach()
        spikes.append(s)
        vs.append(v)
        t, k = t + s.shape[0], k + 1
    return torch.cat(spikes), torch.cat(vs), state


def loss(spikes, v, w):
    return (spikes * w).sum() + (v * w.cos()).sum()


def grads(neuron, x, value):
    return torch.autograd.grad(value, [x, *neuron.parameters()], allow_unused=True)


def assert_grads_close(a, b, tol):
    for u, w in zip(a, b, strict=True):
        assert (u is None) == (w is None)
        if u is not None:
            torch.testing.assert_close(u, w, rtol=0, atol=tol)


def reference(neuron, x, horizon=None):
    """The whole sequence from rest: the stateless call where a state continues it exactly, else one chunk from the
    state (an SOE state whose bank is not the whole call's)."""
    exact = not soe_state(neuron) or (neuron.engine == "soe" and horizon == x.shape[0])
    if exact:
        return neuron(x, return_state=True)
    spikes, v, _ = neuron(x, initial(neuron, x[0], horizon), return_state=True)
    return spikes, v


# -------------------------------------------------------------------------------------------------- chunk equivalence
@pytest.mark.parametrize("sizes", CHUNKINGS, ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("case", CASES)
def test_chunks_match_the_whole_sequence(case, sizes):
    name, options = case
    neuron = make(name, options)
    horizons = [None, T] if soe_state(neuron) else [None]
    for horizon in horizons:
        x, w = inputs()
        ref_s, ref_v = reference(neuron, x, horizon)
        assert 0 < ref_s.mean() < 1  # the input makes it fire and rest
        spikes, v, state = run_chunks(neuron, x, sizes, initial(neuron, x[0], horizon))
        assert torch.equal(spikes, ref_s)
        torch.testing.assert_close(v, ref_v, rtol=0, atol=1e-12)
        assert state.steps == T
        assert_grads_close(grads(neuron, x, loss(spikes, v, w)), grads(neuron, x, loss(ref_s, ref_v, w)), 1e-9)


@pytest.mark.parametrize("case", CASES)
def test_detached_chunks_are_truncated_bptt(case):
    name, options = case
    neuron = make(name, options)
    x, w = inputs()
    sizes = (7,)
    spikes, v, _ = run_chunks(neuron, x, sizes, neuron.initial_state(x[0]), detach=True)
    truncated = grads(neuron, x, loss(spikes, v, w))
    # the reference: each chunk's backward pass on its own, from its starting state detached, summed
    state, total = neuron.initial_state(x[0]), None
    for t in range(0, T, 7):
        s, v_c, state = neuron(x[t : t + 7], state.detach(), return_state=True)
        part = grads(neuron, x, loss(s, v_c, w[t : t + 7]))
        total = part if total is None else [a if b is None else b if a is None else a + b for a, b in zip(total, part)]
    assert_grads_close(truncated, total, 1e-12)
    spikes, v, _ = run_chunks(neuron, x, sizes, neuron.initial_state(x[0]))
    full = grads(neuron, x, loss(spikes, v, w))
    assert not torch.allclose(truncated[0], full[0], rtol=0, atol=1e-9)


# ------------------------------------------------------------------------------------------------ constant SOE memory
@pytest.mark.parametrize("options", [dict(engine="soe"), dict(engine="auto")], ids=["soe", "auto"])
def test_soe_state_size_does_not_grow(options):
    neuron = make("flif", options)
    x = torch.randn(1000, *SHAPE, dtype=torch.float64) + 0.6
    state, sizes = neuron.initial_state(x[0]), {}
    with torch.no_grad():
        for t in range(0, 1000, 10):
            _, state = neuron(x[t : t + 10], state)
            if state.steps in (10, 100, 1000):
                sizes[state.steps] = state.numel()
    assert state.kind == "soe" and sizes[10] == sizes[100] == sizes[1000]


def test_exact_state_grows_by_one_current_per_neuron_and_step():
    neuron = make("flif", dict(engine="direct"))
    x = torch.randn(100, *SHAPE, dtype=torch.float64) + 0.6
    n = x[0].numel()
    with torch.no_grad():
        _, after_10 = neuron(x[:10], neuron.initial_state(x[0]))
        _, after_100 = neuron(x[10:], after_10)
    assert after_100.numel() - after_10.numel() == 90 * n


# ------------------------------------------------------------------------------------------------ held single steps
@pytest.mark.parametrize("case", CASES)
def test_held_single_steps(case):
    name, options = case
    neuron = make(name, options)
    x, w = inputs()
    ref_s, ref_v = reference(neuron, x)
    neuron.step_mode = "s"
    for _ in range(2):  # reset() starts over
        steps = [neuron(x_t, return_state=True) for x_t in x]
        assert torch.equal(torch.stack([s for s, _ in steps]), ref_s)
        torch.testing.assert_close(torch.stack([v for _, v in steps]), ref_v, rtol=0, atol=1e-12)
        assert neuron.state.steps == T
        neuron.reset()
        assert neuron.state is None
    # detach() cuts the graph: the steps after it do not reach the input before it
    neuron(x[0])
    neuron.detach()
    assert not any(t.requires_grad for t in neuron.state._tensors().values())
    later = neuron(x[1], return_state=True)[1]
    (g,) = torch.autograd.grad(later.sum(), [x])
    assert g[0].abs().sum() == 0 and g[1].abs().sum() > 0


# ----------------------------------------------------------------------------------- SpikingJelly's functional helpers
@pytest.mark.parametrize("name", neuron_names())
def test_mixed_spikingjelly_network_steps_and_resets(name):
    torch.manual_seed(1)
    options = dict(engine="direct") if name in ("flif", "fif") else {}
    net = nn.Sequential(
        layer.Linear(3, 8), build_neuron(name, **options), layer.Linear(8, 4), sj_neuron.LIFNode(tau=2.0)
    ).double()
    with torch.no_grad():
        net[0].weight.mul_(3.0)
        net[2].weight.mul_(4.0)
    x = torch.randn(T, 2, 3, dtype=torch.float64) + 0.5
    functional.set_step_mode(net, "m")
    whole = net(x)
    functional.reset_net(net)
    functional.set_step_mode(net, "s")
    first = torch.stack([net(x_t) for x_t in x])
    functional.reset_net(net)
    again = torch.stack([net(x_t) for x_t in x])
    assert 0 < whole.mean() < 1
    assert torch.equal(first, again) and torch.equal(first, whole)


# --------------------------------------------------------------------------------------------- a state like a tensor's
@pytest.mark.parametrize("case", CASES)
def test_state_moves_pickles_and_continues(case):
    name, options = case
    neuron = make(name, options)
    x, _ = inputs()
    x = x.detach()
    _, state = neuron(x[:10], neuron.initial_state(x[0]))
    ref = neuron(x[10:], state, return_state=True)
    copy = pickle.loads(pickle.dumps(state))
    same = neuron(x[10:], copy, return_state=True)
    assert torch.equal(same[0], ref[0]) and torch.equal(same[1], ref[1])
    assert state.to("cpu").device == torch.device("cpu")
    single = state.to(torch.float32)
    assert single.dtype == torch.float32 and single.to(x).dtype == torch.float64
    s32, v32, state32 = neuron(x[10].float(), single, return_state=True)
    assert s32.dtype == v32.dtype == state32.dtype == torch.float32
    torch.testing.assert_close(v32.double(), ref[1][0], rtol=0, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", neuron_names())
def test_compiled_step_matches_eager(name):
    neuron = make(name, dict(engine="direct") if name in ("flif", "fif") else {})
    x, _ = inputs(8)
    x = x.detach()
    step = torch.compile(lambda x_t, s: neuron(x_t, s, return_state=True))
    eager_state = compiled_state = neuron.initial_state(x[0])
    for x_t in x:
        s_e, v_e, eager_state = neuron(x_t, eager_state, return_state=True)
        s_c, v_c, compiled_state = step(x_t, compiled_state)
        assert torch.equal(s_c, s_e)
        torch.testing.assert_close(v_c, v_e, rtol=0, atol=1e-12)


class _Recurrent(nn.Module):
    def __init__(self, neuron):
        super().__init__()
        self.linear, self.neuron = nn.Linear(3, 3).double(), neuron

    def forward(self, x, state):
        return self.neuron(self.linear(x), state)


@pytest.mark.parametrize("name", ["flif", "sj_plif", "snntorch_leaky"])
def test_ddp_chunked_training_step(name, tmp_path):
    x, w = inputs()
    plain = _Recurrent(make(name, dict(engine="soe", learn_alpha=True) if name == "flif" else {}))
    model = _Recurrent(make(name, dict(engine="soe", learn_alpha=True) if name == "flif" else {}))
    model.load_state_dict(plain.state_dict())
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        ddp = DistributedDataParallel(model)
        for net in (plain, ddp):
            state = net.module.neuron.initial_state(x[0]) if net is ddp else net.neuron.initial_state(x[0])
            for t in range(0, T, 12):
                spikes, state = net(x[t : t + 12].detach(), state)
                (spikes * w[t : t + 12]).sum().add(state.v.sum()).backward()
                state = state.detach()
    finally:
        dist.destroy_process_group()
    for (key, a), b in zip(plain.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=0, atol=1e-12, msg=key)


# ------------------------------------------------------------------------------------------------------- bad use
@pytest.mark.parametrize("case", CASES)
def test_bad_use_is_one_clear_error(case):
    name, options = case
    neuron = make(name, options)
    x = torch.randn(4, *SHAPE, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"x must be one step's input, a floating tensor of shape \[B, ...\]"):
        neuron.initial_state(x[0].long())
    wider = neuron.initial_state(torch.zeros(2, 2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"x must be one step \[2, 2, 4\] or a chunk \[T, 2, 2, 4\]"):
        neuron(x, wider)
    state = neuron.initial_state(x[0])
    with pytest.raises(ValueError, match=r"x must be one step \[2, 2, 3\].*got shape \[4, 3, 2, 3\]"):
        neuron(torch.randn(4, 3, 2, 3, dtype=torch.float64), state)
    with pytest.raises(ValueError, match=r"x is torch.float64 .* the state holds torch.float32"):
        neuron(x, state.to(torch.float32))
    other = make("sj_lif" if name.startswith("f") or name in ("lif", "if") else "flif", {})
    expected = type(neuron.initial_state(x[0])).__name__
    with pytest.raises(ValueError, match=f"state must be a {expected}"):
        neuron(x, other.initial_state(x[0]))


def test_a_state_of_another_history_is_refused():
    x = torch.randn(4, *SHAPE, dtype=torch.float64)
    soe = make("flif", dict(engine="soe")).initial_state(x[0])
    with pytest.raises(ValueError, match="keeps a 'exact' state"):
        make("flif", dict(engine="direct"))(x, soe)
    with pytest.raises(ValueError, match="keeps a 'window' state"):
        make("flif", dict(engine="direct", memory=5))(x, make("flif", dict(memory=7)).initial_state(x[0]))
    with pytest.raises(ValueError, match="state must be a HistoryState"):
        FractionalLIF().double()(x, make("sj_lif", {}).initial_state(x[0]))


@pytest.mark.parametrize("name", neuron_names("sj_*"))
def test_spikingjelly_chunks_in_float32_keep_the_graph_through_the_state(name):
    """float32 runs SpikingJelly's own fused multi-step op (float64 its torch reference): the chunk still
    differentiates through the state's ``v``."""
    neuron = build_neuron(name)
    x, w = (t.float() for t in inputs())
    x = x.detach().requires_grad_()
    ref_s, ref_v = neuron(x, return_state=True)
    spikes, v, _ = run_chunks(neuron, x, (7,), neuron.initial_state(x[0]))
    assert torch.equal(spikes, ref_s)
    assert_grads_close(grads(neuron, x, loss(spikes, v, w)), grads(neuron, x, loss(ref_s, ref_v, w)), 1e-5)
