"""CUDA paths: every engine on the GPU gives what it gives on the CPU, forward and backward.

Skipped where no GPU is present (CI); run on a GPU machine with ``pytest tests/test_cuda.py``.
The CPU results are themselves checked against the literal equations in ``test_neurons.py``, so
agreement here means the GPU path computes the paper's dynamics.
"""

from __future__ import annotations

import pytest
import torch
from helpers import needs_cuda

from fsnn import FractionalIF, FractionalLIF, build_neuron
from fsnn.models import build_backbone
from fsnn.neurons import triton_kernels as kernels
from fsnn.neurons.surrogate import SURROGATES

pytestmark = needs_cuda
CUDA = torch.device("cuda")


@pytest.fixture(autouse=True)
def _torch_engines_on_the_cpu(monkeypatch):
    """The CPU references are the torch engines (checked against the equations), not the compiled CPU loops."""
    monkeypatch.setenv("FSNN_CPU_KERNELS", "0")


def _run(neuron: torch.nn.Module, x: torch.Tensor):
    """Spikes, potentials and the gradients of a spike-and-potential loss w.r.t. input and parameters."""
    x = x.clone().requires_grad_(True)
    spikes, v = neuron(x, return_state=True)
    weights = torch.linspace(-1, 1, v.numel(), device=x.device, dtype=x.dtype).reshape(v.shape)
    (spikes.sum() + (weights * v).sum()).backward()
    params = {name: p.grad.detach().cpu() for name, p in neuron.named_parameters() if p.grad is not None}
    return spikes.detach().cpu(), v.detach().cpu(), x.grad.detach().cpu(), params


@pytest.mark.parametrize("cls", [FractionalLIF, FractionalIF])
@pytest.mark.parametrize(
    "options",
    [
        dict(engine="direct"),
        dict(engine="soe"),
        dict(engine="direct", memory=8),
        dict(engine="direct", reset="hard", v_reset=-0.1, method="gl"),
        dict(engine="direct", method="l1", learn_alpha=True, learn_tau=True, learn_threshold=True),
        dict(engine="soe", learn_alpha=True),
        dict(convention="spikede"),
    ],
    ids=["direct", "soe", "window8", "hard-gl", "l1-learn-all", "soe-learn-alpha", "spikede"],
)
def test_gpu_matches_cpu(cls, options):
    torch.manual_seed(0)
    T = 160 if options.get("engine") == "soe" else 48  # soe needs T > 2 blocks to engage
    x = torch.randn(T, 3, 37, dtype=torch.float64) * 0.8 + 0.4
    cpu = cls(alpha=0.6, tau=2.0, **options).double()
    gpu = cls(alpha=0.6, tau=2.0, **options).double().to(CUDA)
    want, got = _run(cpu, x), _run(gpu, x.to(CUDA))
    assert gpu.last_engine == cpu.last_engine
    assert torch.equal(got[0], want[0]), "spike trains differ between CPU and GPU"
    for name, a, b in (("potential", got[1], want[1]), ("input grad", got[2], want[2])):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10, msg=lambda m: f"{name}: {m}")
    assert got[3].keys() == want[3].keys()
    for name in want[3]:
        torch.testing.assert_close(got[3][name], want[3][name], rtol=1e-8, atol=1e-10)


def test_mixed_precision_on_gpu():
    """bf16 inputs (autocast) run in fp32 inside and come back in bf16, close to the fp32 result."""
    torch.manual_seed(1)
    x = torch.randn(64, 8, 128, device=CUDA) * 0.8 + 0.4
    neuron = FractionalLIF(alpha=0.5).to(CUDA)
    ref = neuron(x)
    out = neuron(x.to(torch.bfloat16))
    assert out.dtype == torch.bfloat16
    mismatch = (out.float() != ref).float().mean().item()
    assert mismatch < 0.02, f"{mismatch:.3%} of spikes differ between bf16 and fp32 inputs"


@pytest.mark.parametrize("neuron", ["flif", "lif", "sj_lif", "snntorch_leaky"])
def test_dvsnet_train_step_on_gpu(neuron):
    """A DVSNet training step runs on the GPU for every neuron and matches the CPU loss."""
    torch.manual_seed(0)
    kwargs = {"alpha": 0.5} if neuron == "flif" else {}
    model = build_backbone(
        "dvsnet", num_classes=11, in_channels=2, input_size=(32, 32), neuron=neuron, neuron_kwargs=kwargs, channels=16
    )
    x = (torch.rand(8, 2, 2, 32, 32) < 0.2).float()
    y = torch.randint(0, 11, (2,))
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model.eval()  # batch-norm statistics identical on both devices
    loss_cpu = torch.nn.functional.cross_entropy(model(x).mean(0), y)
    model.to(CUDA)
    loss_gpu = torch.nn.functional.cross_entropy(model(x.to(CUDA)).mean(0), y.to(CUDA))
    loss_gpu.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters() if p.requires_grad)
    torch.testing.assert_close(loss_gpu.detach().cpu(), loss_cpu.detach(), rtol=1e-3, atol=1e-3)


def test_registry_neurons_keep_state_on_gpu():
    for name in ("flif", "fif", "lif", "if", "sj_lif", "sj_if", "snntorch_leaky"):
        neuron = build_neuron(name).to(CUDA)
        out = neuron(torch.rand(6, 2, 5, device=CUDA) * 2)
        assert out.device.type == CUDA.type and out.shape == (6, 2, 5), name


# ---------------------------------------------------------------------------------------------
# the fused Triton kernels against fsnn's torch engines on the same GPU, at realistic sizes


KERNEL_CASES = {  # name -> (T, options); every option the torch engines cover
    "direct-T32": (32, {}),
    "soe-T64": (64, {}),
    "soe-T1024": (1024, {}),
    "soe-gl-hard-detach": (512, dict(method="gl", reset="hard", v_reset=-0.1, detach_reset=True)),
    "window8": (256, dict(memory=8)),
    "window100-far": (256, dict(memory=100)),
    "l1-full-far": (160, dict(method="l1")),
    "soe-learn-all": (300, dict(learn_alpha=True, learn_tau=True, learn_threshold=True)),
    "direct-learn-tau-threshold": (48, dict(learn_tau=True, learn_threshold=True)),
}


def _pair(cls, T, **options):
    """The same neuron on the torch engines (the algorithm auto picks) and on the kernels."""
    ref = cls(alpha=0.6, tau=2.0, **options).to(CUDA)
    fused = cls(alpha=0.6, tau=2.0, engine="triton", **options).to(CUDA)
    fused.load_state_dict(ref.state_dict())
    algorithm = fused.resolve_engine(T, 0.6, CUDA)[0].removeprefix("triton-")
    ref.engine = algorithm  # on CUDA, auto would pick the kernels
    return ref, fused


@pytest.mark.parametrize("cls", [FractionalLIF, FractionalIF], ids=["lif", "if"])
@pytest.mark.parametrize("case", list(KERNEL_CASES))
def test_kernels_match_torch_engines_float64(cls, case):
    """Float64: the same spikes, potentials and gradients to rounding (1e-10)."""
    T, options = KERNEL_CASES[case]
    ref, fused = (m.double() for m in _pair(cls, T, **options))
    torch.manual_seed(0)
    x = (torch.randn(T, 4, 1024, dtype=torch.float64) * 0.9 + 0.6).to(CUDA)
    want, got = _run(ref, x), _run(fused, x)
    assert fused.last_engine.startswith("triton-") and ref.last_engine == fused.last_engine[len("triton-") :]
    assert torch.equal(got[0], want[0]) and want[0].sum() > 0.02 * want[0].numel()
    for name, a, b in (("potential", got[1], want[1]), ("input grad", got[2], want[2])):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10 * b.abs().max().item(), msg=lambda m: f"{name}: {m}")
    assert got[3].keys() == want[3].keys()
    for name in want[3]:
        torch.testing.assert_close(got[3][name], want[3][name], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("surrogate", SURROGATES)
def test_kernels_float32_at_scale(surrogate):
    """Float32, 2^20 neurons: all but rare threshold ties agree, potentials and gradients to 1e-5."""
    ref, fused = (
        FractionalLIF(alpha=0.5, surrogate=surrogate),
        FractionalLIF(alpha=0.5, surrogate=surrogate, engine="triton"),
    )
    ref.engine = "soe"
    torch.manual_seed(1)
    x = torch.randn(256, 16, 2**16, device=CUDA) * 0.9 + 0.6
    want, got = _run(ref.to(CUDA), x), _run(fused.to(CUDA), x)
    flips = (got[0] != want[0]).any(0)  # neurons whose spike train differs anywhere
    assert flips.float().mean() < 1e-3
    for a, b in ((got[1], want[1]), (got[2], want[2])):
        # rounding-level differences can still cross a threshold, or the edge of the box surrogate
        err = ((a - b).abs() / b.abs().max()).amax(0)[~flips]
        assert (err < 1e-5).float().mean() > 0.999, err.max()


def test_auto_uses_the_kernels_on_cuda_and_autocast():
    m = FractionalLIF(alpha=0.5).to(CUDA)
    x = torch.randn(300, 8, 512, device=CUDA)
    m(x)
    assert m.last_engine == "triton-soe"
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = torch.nn.Linear(512, 512).to(CUDA)(x)
        s = m(y)
    assert s.dtype == torch.bfloat16 and m.last_engine == "triton-soe"
    assert kernels.unavailable_reason(CUDA) is None


@pytest.mark.parametrize(
    "overrides, precision",
    [
        (["+smoke=vision"], "32-true"),  # the default dataset (digits_dvs) and backbone
        (["dataset=cora", "backbone=sgcn", "+smoke=graph"], "bf16-mixed"),
        (["dataset=delayed_cue", "backbone=seqmlp", "dataset.delay=128", "+smoke=sequence"], "32-true"),  # T = 140
    ],
    ids=["vision", "graph-bf16", "sequence"],
)
def test_train_app_end_to_end_on_the_gpu(tmp_path, data_root, overrides, precision):
    import json
    import math

    from helpers import run_app

    proc = run_app(
        "train.py",
        *overrides,
        "neuron=flif",
        "trainer.accelerator=gpu",
        "trainer.devices=1",
        f"trainer.precision={precision}",
        f"paths.data_dir={data_root}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = json.loads(next((tmp_path / "runs").rglob("metrics.json")).read_text())
    assert m["status"] == "complete" and m["precision"] == precision and not m["device"].startswith("cpu")
    for key in ("test_acc", "val_acc_best", "train_samples_per_s", "test_samples_per_s", "peak_memory_gib"):
        assert isinstance(m[key], float) and math.isfinite(m[key]), key
    assert m["peak_memory_kind"] == "cuda max_memory_allocated" and m["firing_rates"]
    engines = {entry["engine"] for entry in m["neurons"].values()}
    assert engines and all(e.startswith("triton-") for e in engines), engines  # the fused kernels ran


def test_parameters_input_check_second_derivatives_and_compile_on_the_gpu():
    """On a GPU: a cast never rounds alpha, NaN inputs are checked only under anomaly detection (a check would read
    the device at every layer), a NaN raw parameter is refused, a second derivative through the kernels is refused,
    and torch.compile runs around the kernels."""
    neuron = FractionalLIF(alpha=0.3, learn_tau=True).to(CUDA).half()
    assert neuron.alpha.device.type == "cuda" and neuron.alpha.dtype == torch.float64 and float(neuron.alpha) == 0.3
    assert neuron.tau_raw.device.type == "cuda" and neuron.tau_raw.dtype == torch.float32
    x = (torch.rand(12, 2, 8, device=CUDA) * 2).requires_grad_()
    spikes, v = neuron(x, return_state=True)
    assert neuron.last_engine.startswith("triton")
    with pytest.raises(RuntimeError, match="is differentiable once"):
        torch.autograd.grad(v.square().sum(), x, create_graph=True)
    compiled = torch.compile(torch.nn.Sequential(torch.nn.Linear(8, 8), neuron).to(CUDA), backend="eager")
    assert compiled(x).shape == x.shape
    nan = torch.full((4, 2, 8), float("nan"), device=CUDA)
    neuron(nan)  # not checked
    with torch.autograd.detect_anomaly(), pytest.raises(ValueError, match="x must be finite"):
        neuron(nan)
    with torch.no_grad():
        neuron.tau_raw.fill_(float("nan"))
    with pytest.raises(ValueError, match="tau_raw must be a finite number"):
        neuron(x)
