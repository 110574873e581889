"""The compiled CPU loops (``engine="cpp"``, :mod:`fsnn.neurons.cpu_kernels`) against the torch direct engine.

The torch engines are checked against the literal equations in ``test_neurons.py``; agreement here (float64: to
rounding) means the compiled loops compute the same dynamics. ``test_autograd.py`` runs ``gradcheck`` on them.
Skipped where the loops cannot be built (no C++ compiler); the fallback itself is tested without building.
"""

from __future__ import annotations

import logging

import pytest
import torch
from helpers import needs_built

from fsnn import FractionalIF, FractionalLIF, compiled
from fsnn.checks import OptionError
from fsnn.neurons import cpu_kernels

built = needs_built(cpu_kernels.EXTENSION, "the CPU kernels")

CASES = {
    "lif-soft": (FractionalLIF, dict(alpha=0.3)),
    "if-hard": (FractionalIF, dict(alpha=0.6, reset="hard", v_reset=-0.2)),
    "lif-hard-detach": (FractionalLIF, dict(alpha=0.45, reset="hard", detach_reset=True, method="gl")),
    "window-learn-all": (
        FractionalLIF,
        dict(alpha=0.5, memory=7, learn_alpha=True, learn_tau=True, learn_threshold=True),
    ),
    "l1-alpha-1": (FractionalLIF, dict(alpha=1.0, method="l1")),
}


def run(neuron, x):
    """Spikes, potentials and the gradients (input, every parameter) of a spike-and-potential loss."""
    x = x.clone().requires_grad_(True)
    s, v = neuron(x, return_state=True)
    w = torch.linspace(-1, 1, v.numel(), dtype=v.dtype).reshape(v.shape)
    grads = torch.autograd.grad(s.sum() + (w * v).sum(), [x, *neuron.parameters()])
    return s.detach(), v.detach(), grads


@built
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("T", [1, 37, 90])
def test_cpp_matches_the_torch_direct_engine(case, T):
    cls, options = CASES[case]
    ref, cpp = cls(engine="direct", **options).double(), cls(engine="cpp", **options).double()
    cpp.load_state_dict(ref.state_dict())
    g = torch.Generator().manual_seed(T)
    x = torch.randn(T, 3, 45, generator=g, dtype=torch.float64) * 1.3 + 0.6  # 135 neurons: two tiles and a rest
    (s0, v0, g0), (s1, v1, g1) = run(ref, x), run(cpp, x)
    assert cpp.last_engine == "cpp-direct" and ref.last_engine == "direct"
    assert torch.equal(s1, s0)
    if T > 1:
        assert 0.05 * s0.numel() < s0.sum() < 0.95 * s0.numel()  # both sides of the threshold are exercised
    torch.testing.assert_close(v1, v0, rtol=0, atol=1e-12)
    assert len(g1) == len(g0) == 1 + len(list(ref.parameters()))
    for a, b in zip(g1, g0):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@built
def test_cpp_float32_and_half_inputs():
    ref, cpp = FractionalLIF(alpha=0.4, engine="direct"), FractionalLIF(alpha=0.4, engine="cpp")
    x = torch.randn(50, 4, 70, generator=torch.Generator().manual_seed(1)) * 1.2 + 0.5
    (s0, v0, _), (s1, v1, _) = run(ref, x), run(cpp, x)
    assert (s0 != s1).float().mean() < 1e-3  # float32 sums in another order: a rare threshold tie may flip
    torch.testing.assert_close(v1, v0, rtol=0, atol=1e-3)
    half = cpp(x.bfloat16())
    assert half.dtype == torch.bfloat16 and cpp.last_engine == "cpp-direct"


@built
def test_auto_picks_the_compiled_loops_on_the_cpu_up_to_its_limit(monkeypatch):
    m = FractionalLIF(alpha=0.5)
    m(torch.rand(16, 2, 3))
    assert m.last_engine == "cpp-direct"
    m(torch.rand(cpu_kernels.AUTO_MAX_STEPS + 1, 2, 3))
    assert m.last_engine == "soe"  # O(T^2) past the limit: the O(T) torch engine
    monkeypatch.setenv("FSNN_CPU_KERNELS", "0")  # read when a neuron first meets a sequence length
    m = FractionalLIF(alpha=0.5)
    m(torch.rand(16, 2, 3))
    assert m.last_engine == "direct"


def test_a_failed_build_falls_back_to_the_torch_engines_with_one_warning(monkeypatch, caplog):
    monkeypatch.setattr(cpu_kernels.EXTENSION, "module", lambda: OSError("no C++ compiler found\ncommand 'c++' failed"))
    compiled._warn_once.cache_clear()
    with caplog.at_level(logging.WARNING, logger=compiled.__name__):
        m = FractionalLIF(alpha=0.5)
        m(torch.rand(16, 2, 3))
        m(torch.rand(12, 2, 3))
    assert m.last_engine == "direct"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "command 'c++' failed" in warnings[0] and "torch code runs instead" in warnings[0]
    with pytest.raises(ValueError, match=r"engine='cpp' cannot run here: their build failed .*use engine='auto'"):
        FractionalLIF(engine="cpp")(torch.rand(4, 2))
    with pytest.raises(OptionError, match="engine"):
        FractionalLIF.check_options(
            dict(alpha=0.5, tau=2.0, dt=1.0, method="pred", memory=None, convention="fsnn", engine="cpp")
        )
    compiled._warn_once.cache_clear()


def test_cpp_refuses_the_spikede_convention_and_cuda_tensors():
    with pytest.raises(ValueError, match=r"engine='cpp' runs the fsnn convention"):
        FractionalLIF(engine="cpp", convention="spikede")
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="CPU tensors"):
            FractionalLIF(engine="cpp").cuda()(torch.rand(4, 2, device="cuda"))
