"""Every engine supports autograd's features: exact gradients (``gradcheck``) of the input and of every learnable
parameter at every sequence length, including lengths shorter than the SOE engine's exact head, non-reentrant
activation checkpointing, ``torch.compile`` (a graph break at each neuron), and a one-line refusal of what it
cannot support (``torch.func`` transforms, ``torch.jit.script``, second derivatives through the analytic backward,
``torch.compile(fullgraph=True)``, ``torch.export``).

``gradcheck`` compares the analytic backward with finite differences. The spike is a step, so the test uses a
piecewise-linear surrogate of width 1e-4 (zero away from the threshold, like the step's true derivative) and
``detach_reset=True`` (the reset current is then a constant in both, between the rare inputs that flip a spike).
The Triton engine runs on CPU tensors through Triton's interpreter (``conftest.py``); the compiled CPU engine
(``cpp``) is skipped where it cannot be built.
"""

from __future__ import annotations

import re
import warnings

import pytest
import torch
from torch.func import functional_call
from torch.utils.checkpoint import checkpoint

from fsnn import FractionalLIF
from fsnn.neurons import cpu_kernels, triton_kernels as kernels

ENGINES = ["direct", "soe", "triton", "cpp", "spikede"]
FLAGS = ["none", "learn_alpha", "learn_tau", "learn_threshold"]
STEPS = [1, 2, 8, 9, 64]  # 9: the SOE engine's exact head (FractionalNeuron.soe_head)


def neuron(engine: str, **options) -> FractionalLIF:
    if engine == "triton" and (reason := kernels.unavailable_reason(torch.device("cpu"))) is not None:
        pytest.skip(f"engine='triton' cannot run on CPU tensors here: {reason}")
    if engine == "cpp" and (reason := cpu_kernels.unavailable_reason()) is not None:
        pytest.skip(f"engine='cpp' cannot run here: {reason}")
    kind = dict(convention="spikede") if engine == "spikede" else dict(engine=engine)
    m = FractionalLIF(
        alpha=0.6, tau=1.7, surrogate="piecewise_linear", surrogate_scale=1e-4, detach_reset=True, **kind, **options
    )
    m.block = 5  # several blocks at T = 9 and 64 (and the SOE head stays 9: min(soe_head, 2 block)): the engines' far-field history is exercised too
    return m.double()


def currents(T: int, seed: int = 3) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(T, 2, 3, generator=g, dtype=torch.float64) * 0.8 + 1.2


@pytest.mark.parametrize(
    "engine, flag, T",
    [
        # the interpreter runs a Triton kernel step by step in NumPy: ~30 s a case at T = 64
        pytest.param(e, f, T, marks=[pytest.mark.slow] if (e, T) == ("triton", 64) else [])
        for e in ENGINES
        for f in FLAGS
        for T in STEPS
    ],
)
def test_gradcheck_every_engine_flag_and_length(engine, flag, T):
    m = neuron(engine, **({} if flag == "none" else {flag: True}))
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]
    assert len(params) == (flag != "none")

    def fn(x, *p):
        return functional_call(m, dict(zip(names, p)), (x,), {"return_state": True})

    x = currents(T).requires_grad_()
    spikes, _ = fn(x, *params)
    if T >= 8:
        assert 0 < spikes.sum() < spikes.numel()  # both sides of the threshold are exercised
    # fast mode compares random projections of the Jacobian: a few forwards, not two per input element
    assert torch.autograd.gradcheck(fn, (x, *params), eps=1e-6, atol=1e-6, rtol=1e-4, fast_mode=True)


@pytest.mark.parametrize("engine", ENGINES)
def test_non_reentrant_checkpointing_gives_the_plain_gradients(engine):
    grads = []
    for wrap in (lambda f, x: f(x), lambda f, x: checkpoint(f, x, use_reentrant=False)):
        m = neuron(engine, learn_alpha=True, learn_tau=True, learn_threshold=True)
        x = currents(12).requires_grad_()
        spikes = wrap(m, x)
        (spikes * torch.linspace(-1, 1, spikes.numel(), dtype=spikes.dtype).view_as(spikes)).sum().backward()
        grads.append([x.grad, *(p.grad for p in m.parameters())])
    for plain, checkpointed in zip(*grads):
        torch.testing.assert_close(checkpointed, plain, rtol=0, atol=0)


def test_soe_alpha_gradient_shorter_than_its_exact_head():
    m = FractionalLIF(engine="soe", learn_alpha=True, learn_tau=True)
    for T in range(1, m.soe_head + 1):
        m.zero_grad()
        m(currents(T).float() * 2).sum().backward()
        assert m.last_engine == "soe"
        assert torch.isfinite(m.alpha_raw.grad) and torch.isfinite(m.tau_raw.grad)


def test_torch_func_transforms_are_refused_in_one_line():
    m = FractionalLIF()
    x = torch.rand(3, 4, 2, 5)
    for transform in (torch.func.vmap(m), torch.func.grad(lambda x: m(x).sum())):
        with pytest.raises(
            TypeError,
            match=r"^FractionalLIF does not run under torch.func transforms \(vmap, "
            r"grad, jacrev, \.\.\.\); use loss.backward\(\).*\[T, B \* V, \.\.\.\]$",
        ):
            transform(x)


def test_jit_script_is_refused_in_one_line():
    model = torch.nn.Sequential(torch.nn.Linear(5, 5), FractionalLIF())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit.script is deprecated
        with pytest.raises(
            TypeError,
            match=r"^torch.jit.script cannot compile FractionalLIF \(.*\); call the "
            r"module eagerly$",
        ):
            torch.jit.script(model)


@pytest.mark.parametrize("engine", ["direct", "soe", "triton", "cpp"])
def test_a_second_derivative_is_refused_in_one_line(engine):
    # the engines' analytic backward runs in place, in compiled loops or Triton kernels: create_graph=True through it
    # would give a gradient without (or with a wrong) derivative of its own
    m = neuron(engine, learn_tau=True)
    x = currents(6).requires_grad_()
    spikes, v = m(x, return_state=True)
    with pytest.raises(
        RuntimeError,
        match=r"^the backward of fsnn's fractional neurons \(FractionalLIF, FractionalIF, "
        r"every engine of convention='fsnn'\) is differentiable once: "
        r"create_graph=True through it \(for a second derivative",
    ):
        torch.autograd.grad(v.square().sum() + spikes.sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="is differentiable once"):
        torch.autograd.gradgradcheck(lambda x: m(x, return_state=True)[1], (currents(3).requires_grad_(),))
    (grad,) = torch.autograd.grad(v.square().sum(), x)  # a first derivative is unaffected
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0


def test_the_spikede_convention_has_exact_second_derivatives():
    # its loop is differentiated by autograd, the spike's surrogate included (out of place, so twice)
    m = FractionalLIF(alpha=0.6, tau=1.7, surrogate="sigmoid", surrogate_scale=2.0, convention="spikede").double()
    x = currents(6).requires_grad_()
    assert torch.autograd.gradgradcheck(lambda x: [*m(x, return_state=True)], (x,), eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("surrogate", ["sigmoid", "arctan", "piecewise_linear", "gaussian"])
def test_the_spike_function_has_exact_second_derivatives(surrogate):
    from fsnn.neurons.surrogate import spike

    x = torch.linspace(-2.1, 1.9, 9, dtype=torch.float64, requires_grad=True)  # none at the box's edges
    assert torch.autograd.gradgradcheck(lambda x: spike(x, surrogate, 1.5), (x,))


def test_the_confined_parameters_have_exact_second_derivatives_inside_their_bounds():
    from fsnn.neurons.fractional import Confine

    # at a bound the gradient is projected on purpose (a first derivative that finite differences do not see)
    x = torch.tensor([-0.9, -0.5, 0.3, 1.5, 1.9], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda x: Confine.apply(x, -1.0, 2.0).pow(3), (x,))


def test_torch_compile_runs_a_network_with_a_graph_break_at_each_neuron():
    # the finiteness check is an assertion in the graph (no read back to Python); the engines run eagerly between
    # the compiled pieces, with the same numbers and gradients
    from torch._dynamo.utils import counters

    torch.manual_seed(1)  # both neuron layers fire
    net = torch.nn.Sequential(
        torch.nn.Linear(3, 4),
        FractionalLIF(learn_tau=True),
        torch.nn.Linear(4, 4),
        FractionalLIF(alpha=0.7, engine="direct", threshold=0.1),
        torch.nn.Linear(4, 2),
    )
    x = torch.rand(5, 2, 3) * 6
    graphs = []

    def backend(graph, inputs):  # dynamo's graphs, run as they are (backend="eager"), kept to be looked at
        graphs.append(graph)
        return graph.forward

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(net, backend=backend)
    outputs, grads = [], []
    for run in (net, compiled):
        out = run(x)
        torch.autograd.backward(out, torch.linspace(-1, 1, out.numel()).view_as(out))
        outputs.append(out)
        grads.append([p.grad.clone() for p in net.parameters()])
        net.zero_grad()
    assert torch.equal(*outputs)
    assert all(torch.equal(a, b) for a, b in zip(*grads)) and all(g.abs().sum() > 0 for g in grads[0])
    breaks = counters["graph_break"]
    assert breaks and all("EngineDispatch._integrate" in reason for reason in breaks)  # only at the engines
    assert any(node.target is torch._assert_async for graph in graphs for node in graph.graph.nodes)
    with pytest.raises(RuntimeError, match=r"x must be finite, got NaN or inf values"):
        compiled(torch.full_like(x, float("nan")))
    torch._dynamo.reset()


def test_fullgraph_compilation_and_export_are_refused_naming_the_neuron():
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), FractionalLIF())
    x = torch.rand(5, 2, 3)
    reason = re.escape("its engines run outside the graph")
    torch._dynamo.reset()
    with pytest.raises(Exception, match=reason):  # torch's Unsupported, with the reason of torch.compiler.disable
        torch.compile(net, backend="eager", fullgraph=True)(x)
    with pytest.raises(RuntimeError, match=rf"^torch.export cannot export FractionalLIF: {reason}"):
        torch.export.export(net, (x,))
    torch._dynamo.reset()
