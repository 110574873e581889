"""The fused Triton kernels against the torch engines, option by option.

Without a GPU the kernels run through Triton's interpreter (``TRITON_INTERPRET=1``, set in
``conftest.py``) on CPU tensors: the same kernel code, executed step by step in NumPy. The torch
engines are themselves checked against the literal equations in ``test_neurons.py``, so agreement
here means the kernels compute the paper's dynamics. ``test_cuda.py`` repeats this on a GPU at
realistic sizes.
"""

from __future__ import annotations

import pytest
import torch

from fsnn import FractionalIF, FractionalLIF
from fsnn.neurons import triton_kernels as kernels
from fsnn.neurons.surrogate import SURROGATES

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
pytestmark = pytest.mark.skipif(
    kernels.unavailable_reason(DEVICE) is not None, reason=str(kernels.unavailable_reason(DEVICE))
)


@pytest.fixture(autouse=True)
def _torch_engines_on_the_cpu(monkeypatch):
    """``auto`` on CPU tensors means the torch engines here (the references), not the compiled CPU loops."""
    monkeypatch.setenv("FSNN_CPU_KERNELS", "0")


def inputs(T, shape=(3, 23), dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(T, *shape, generator=g, dtype=torch.float64) * 0.9 + 0.7).to(dtype).to(DEVICE)


def run(neuron, x, loss="both"):
    """Spikes, potentials and gradients (input and every parameter) of a spike-and-potential loss."""
    x = x.clone().requires_grad_(True)
    s, v = neuron(x, return_state=True)
    w = torch.linspace(-1, 1, v.numel(), dtype=torch.float64).reshape(v.shape).to(v)
    total = {"both": s.sum() + (w * v).sum(), "spikes": (w * s).sum(), "potential": (w * v).sum()}[loss]
    total.backward()
    params = {n: p.grad.detach() for n, p in neuron.named_parameters() if p.grad is not None}
    return s.detach(), v.detach(), x.grad.detach(), params


def pair(cls, block=None, **options):
    """The same neuron on the torch engines (``auto``) and on the kernels (``triton``), equal parameters."""
    ref, fused = cls(**options).to(DEVICE), cls(engine="triton", **options).to(DEVICE)
    if options.get("engine") is None and block:
        ref.block = fused.block = block  # the SOE engages at T > 2 blocks: keeps the interpreter fast
    fused.load_state_dict(ref.state_dict())
    return ref, fused


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def assert_same(got, want, tol):
    assert torch.equal(got[0], want[0]), "spike trains differ"
    assert want[0].sum() > 0.05 * want[0].numel(), "too few spikes for a meaningful comparison"
    assert rel(got[1], want[1]) <= tol, f"potential: {rel(got[1], want[1]):.2e}"
    assert rel(got[2], want[2]) <= tol, f"input gradient: {rel(got[2], want[2]):.2e}"
    assert got[3].keys() == want[3].keys()
    for name in want[3]:
        assert rel(got[3][name], want[3][name]) <= tol, f"{name} gradient: {rel(got[3][name], want[3][name]):.2e}"


CASES = {  # name -> (T, block, options); the torch engine each case exercises is in the name
    "direct": (24, None, {}),
    "direct-hard-gl": (23, None, dict(reset="hard", v_reset=-0.1, method="gl")),
    "direct-detach": (21, None, dict(detach_reset=True)),
    "direct-hard-detach": (21, None, dict(reset="hard", detach_reset=True)),
    "soe": (40, 8, {}),
    "soe-gl-hard": (37, 8, dict(method="gl", reset="hard", v_reset=-0.2)),
    "window": (30, None, dict(memory=5)),
    "direct-learn-tau-threshold": (19, None, dict(learn_tau=True, learn_threshold=True)),
    "soe-learn-all": (34, 8, dict(learn_alpha=True, learn_tau=True, learn_threshold=True)),
    "direct-l1-learn-alpha": (22, None, dict(method="l1", learn_alpha=True)),
}


@pytest.mark.parametrize("cls", [FractionalLIF, FractionalIF], ids=["lif", "if"])
@pytest.mark.parametrize("case", list(CASES))
def test_kernels_match_torch_engines_float32(cls, case):
    T, block, options = CASES[case]
    ref, fused = pair(cls, block, alpha=0.6, tau=2.0, **options)
    x = inputs(T)
    want, got = run(ref, x), run(fused, x)
    assert fused.last_engine == "triton-" + ref.last_engine, (fused.last_engine, ref.last_engine)
    assert case.split("-")[0] == ref.last_engine or case.startswith("window")
    assert_same(got, want, 1e-5)


@pytest.mark.parametrize("case", ["direct-hard-gl", "soe-gl-hard", "window", "soe-learn-all"])
def test_kernels_match_torch_engines_float64(case):
    T, block, options = CASES[case]
    ref, fused = pair(FractionalLIF, block, alpha=0.35, tau=1.7, **options)
    ref.double(), fused.double()
    x = inputs(T, dtype=torch.float64, seed=1)
    assert_same(run(fused, x), run(ref, x), 1e-12)


@pytest.mark.parametrize("surrogate", SURROGATES)
def test_every_surrogate(surrogate):
    ref, fused = pair(FractionalLIF, alpha=0.45, reset="hard", surrogate=surrogate, surrogate_scale=0.9)
    x = inputs(20, seed=2)
    assert_same(run(fused, x), run(ref, x), 1e-5)


@pytest.mark.parametrize("loss", ["spikes", "potential"])
def test_a_loss_on_one_output_only(loss):
    """Backward with only ``dL/dS`` or only ``dL/dV`` (the other gradient is ``None`` in the kernel)."""
    ref, fused = pair(FractionalLIF, 8, alpha=0.7)
    x = inputs(36, seed=3)
    assert_same(run(fused, x, loss), run(ref, x, loss), 1e-5)


def test_exact_history_beyond_the_register_ring(monkeypatch):
    """Lags past ``R_MAX`` are read back from the history buffer: full exact memory and a long window."""
    monkeypatch.setattr(kernels, "R_MAX", 4)
    assert kernels.ring_size(26, soe=False) == (4, 25)  # 4 lags in registers, 5..25 from the buffer
    x = inputs(26, seed=4)
    for options in (dict(method="l1"), dict(memory=9)):
        ref, fused = pair(FractionalLIF, alpha=0.55, **options)
        assert_same(run(fused, x), run(ref, x), 1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_inputs(dtype):
    """fp16/bf16 in and out, fp32 state inside: the same spikes as the torch engines (which upcast)."""
    ref, fused = pair(FractionalLIF, alpha=0.5)
    x = inputs(18, dtype=dtype, seed=5)
    want, got = run(ref, x, "spikes"), run(fused, x, "spikes")
    assert got[0].dtype == dtype and got[2].dtype == dtype
    assert torch.equal(got[0], want[0])
    torch.testing.assert_close(got[2].float(), want[2].float(), rtol=0.02, atol=0.02)


def test_engine_choice_and_errors(monkeypatch):
    m = FractionalLIF(alpha=0.5)
    m(inputs(8).cpu())
    assert m.last_engine == "direct"  # auto uses the Triton kernels on CUDA tensors only
    with pytest.raises(ValueError, match="triton.*spikede"):
        FractionalLIF(engine="triton", convention="spikede")
    monkeypatch.setattr(kernels, "interpreting", lambda: False)
    with pytest.raises(ValueError, match=r"engine='triton' cannot run here: .*CUDA.*use engine='auto'"):
        FractionalLIF(engine="triton")(inputs(8).cpu())
