"""Poisson spike encoding of real-valued inputs (SGCN's and DRSGNN's node features), drawn in bounded chunks.

>>> spikes = poisson_encode(features, T=100, generator=torch.Generator().manual_seed(0))
>>> currents = spikes.linear(fc.weight, fc.bias)   # == fc(spikes.dense()), [T, B, C], without the [T, B, F] spikes

A Poisson encoder fires entry ``i`` at step ``t`` with probability ``p_i = clamp(x_i, 0, 1)``, independently at every
step: ``s_{t,i} = 1[u_{t,i} < p_i]`` with ``u ~ U[0, 1)``. Entries with ``p = 1`` fire at every step and entries with
``p = 0`` never do, so only the *uncertain* entries (``0 < p < 1``) carry random numbers. An encoding draws them with
one of two samplers (its :attr:`PoissonSpikes.sampler`), chosen from its inputs before anything is drawn:

* ``"compiled"`` (CPU tensors, at least :data:`COMPILED_FROM` of the entries uncertain, where the C++ extension
  ``poisson_kernels.cpp`` builds): ``u = u24 / 2^24`` with ``u24`` from SplitMix64, a counter-based generator, at
  positions fixed by the entry and step, seeded with one 63-bit integer drawn from ``generator``; it decides
  ``u24 < ceil(p 2^24)`` (the same event) from the first byte of ``u24``, and draws the other 16 bits only when that
  byte does not decide (1 time in 256). It adds the weight columns of the entries that fired, per step, and keeps
  the spikes as one byte per uncertain entry and step for the backward pass.
* ``"torch"``: ``u`` from ``generator`` (``torch.rand``), step by step, and within a step the uncertain entries in
  row-major order.

Every way of consuming the spikes (:meth:`PoissonSpikes.linear` on any of its paths, :meth:`PoissonSpikes.dense`,
any chunk size) draws its sampler's same stream, so a seeded encoding gives the same spikes whichever path computes
with them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from fsnn.checks import Count, Flag, checked
from fsnn.compiled import CompiledExtension
from fsnn.neurons.engines import once_differentiable

# Elements of the largest intermediate of one chunk ([steps, rows, features] spikes on the dense path, [steps,
# uncertain entries, out features] currents on the sparse one): 4M float32 entries, 16 MiB, whatever the batch.
CHUNK_ELEMENTS = 1 << 22
# linear() builds dense spike chunks and multiplies them with the weight (one GEMM) once the uncertain entries times
# the layer's outputs reach this share of the [rows, features] entries; below it, it adds the weight columns of the
# entries that fired (cheaper when almost every entry is certain). Measured on one CPU core, forward and backward of
# a batch of 32 nodes at T = 100: the dense path costs about 3 ns per spike entry, the sparse one about 8 ns per
# uncertain entry and output, so they break even near 0.4; Cora's z-scored features sit at 0.06 and Photo's at 2.1.
DENSE_FROM = 0.5
# The compiled sampler draws an encoding once this share of its entries is uncertain: Photo's and Computers' z-scored
# features (27 % and 29 %; 94-97 % with fspikeDE's two-hop unstandardised ones), where it costs a fraction of the
# torch paths' random numbers, scatter and GEMM (results/bench/graph_runs.json). Below it the torch sampler draws,
# and its stream is the one behind the committed Cora and CiteSeer runs (a sampler's stream is its own): their
# z-scored features (0.8 % and 0.4 %, 1.7 % and 0.8 % with DRSGNN's positional encoding) and fspikeDE's two-hop
# ones (19 % and 7 %).
COMPILED_FROM = 0.22
EXTENSION = CompiledExtension("fsnn_poisson_kernels", Path(__file__).with_name("poisson_kernels.cpp"))


class PoissonSpikes:
    """Bernoulli ("Poisson") spike trains ``[T, *p.shape]`` that fire with probability ``p = clamp(x, 0, 1)`` at
    each step, drawn once, when they are first used (:meth:`linear` or :meth:`dense`), in chunks whose size does not
    depend on the batch (:data:`CHUNK_ELEMENTS`).

    ``frozen=True`` draws one pattern and repeats it at every step (as fspikeDE's SpikingJelly graph baseline does,
    whose encoder saw its own binary output from the second step on); the default draws anew at every step.

    A sample is used once: a second :meth:`linear` or :meth:`dense` raises, since the random numbers were spent (a
    new sample is a new :func:`poisson_encode`). :meth:`count` is known once it is drawn, :attr:`sampler` (``"compiled"``
    or ``"torch"``, see the module's docstring) from the start.
    """

    def __init__(self, p: torch.Tensor, T: int, generator: torch.Generator | None = None, frozen: bool = False):
        self.T, self.p_shape = T, tuple(p.shape)
        self.steps = 1 if frozen else T
        self.generator = generator
        # [rows, features]: row-major order of the entries is the order of p's elements
        self._p: torch.Tensor | None = p.reshape(-1, p.shape[-1]) if p.dim() > 1 else p.reshape(1, -1)
        self._spike_count: float | None = None
        self.sampler = _sampler_for(self._p)

    def numel(self) -> int:
        return math.prod((self.T, *self.p_shape))

    def count(self) -> float:
        """The number of spikes, without building them (known once they are drawn)."""
        if self._spike_count is None:
            raise RuntimeError("PoissonSpikes.count() is known once the spikes are drawn (linear() or dense())")
        return self._spike_count

    # ---------------------------------------------------------------------------------------------------- the stream
    def _take(self) -> torch.Tensor:
        """The ``[rows, features]`` probabilities, once: a sample is drawn once."""
        if self._p is None:
            raise RuntimeError(
                "these PoissonSpikes were already used: a sample is drawn once (encode again for another one)"
            )
        p, self._p = self._p, None
        return p

    def _draw(
        self, p: torch.Tensor, cost_per_entry: int, per_row: bool
    ) -> Iterator[tuple[slice, slice, torch.Tensor, torch.Tensor]]:
        """The draws of the uncertain entries in stream order, chunk by chunk: ``(steps, rows, index, draws)`` with
        ``index`` the flat (row-major) positions, within the chunk's rows, of the chunk's uncertain entries and
        ``draws [len(steps), len(index)]`` their 0/1 spikes (``p``'s dtype).

        A chunk is several whole steps of all rows, or, when one step of all rows is more than
        :data:`CHUNK_ELEMENTS` (``cost_per_entry`` elements per row and feature if ``per_row``, else per uncertain
        entry), one step of a block of rows: both orders take the generator's numbers in the stream's order."""
        rows, features = p.shape
        uncertain = (p > 0) & (p < 1)
        flat = uncertain.flatten().nonzero().squeeze(1)
        q = p.flatten()[flat]
        starts = [0, *torch.cumsum(uncertain.sum(1), 0).tolist()]  # uncertain entries before each row
        per_step = cost_per_entry * (rows * features if per_row else len(flat))
        block = rows if per_step <= CHUNK_ELEMENTS else max(1, rows * CHUNK_ELEMENTS // per_step)
        step_chunk = max(1, CHUNK_ELEMENTS // max(per_step, 1)) if block == rows else 1
        fired = p.new_zeros(())
        for t0 in range(0, self.steps, step_chunk):
            t1 = min(self.steps, t0 + step_chunk)
            for r0 in range(0, rows, block):
                r1 = min(rows, r0 + block)
                a, b = starts[r0], starts[r1]
                draws = torch.rand((t1 - t0, b - a), generator=self.generator, device=p.device, dtype=p.dtype)
                torch.lt(draws, q[a:b], out=draws)  # 1[u < q] as p's dtype, in place
                fired += draws.sum()
                yield slice(t0, t1), slice(r0, r1), flat[a:b] - r0 * features, draws
        self._count(p, fired)

    def _count(self, p: torch.Tensor, fired: torch.Tensor) -> None:
        """Record the spike count: the certain entries at every step, the ``fired`` draws at each repeat."""
        self._spike_count = float((p >= 1.0).sum()) * self.T + float(fired) * (self.T // self.steps)

    def _seed(self) -> int:
        """The compiled sampler's key: one 63-bit integer from the generator (the encoding's only draw from it)."""
        return int(torch.empty((), dtype=torch.int64).random_(generator=self.generator))

    # -------------------------------------------------------------------------------------------------- consumers
    def dense(self) -> torch.Tensor:
        """The spikes as a ``[T, *p.shape]`` 0/1 tensor (the whole tensor: for small inputs and tests)."""
        p = self._take()
        rows, features = p.shape
        certain = (p >= 1.0).to(p.dtype).flatten()
        if self.sampler == "compiled":
            flat, q = _uncertain(p)
            drawn = EXTENSION.module().spikes(flat, q, rows, features, self.steps, self._seed())
            self._count(p, drawn.sum())
            spikes = drawn + certain
        else:
            spikes = certain.expand(self.steps, -1).clone()
            for steps, block, index, draws in self._draw(p, 1, True):
                spikes[steps, block.start * features : block.stop * features].scatter_(1, index.expand_as(draws), draws)
        return spikes.view(self.steps, *self.p_shape).expand(self.T, *self.p_shape)

    def linear(self, weight: torch.Tensor, bias: torch.Tensor | None = None, noise_std: float = 0.0) -> torch.Tensor:
        """``F.linear(spikes + noise, weight, bias)`` for ``[T, B, F]`` spikes, ``[T, B, C]``, chunk by chunk.

        ``W 1[p = 1] + b`` once for the certain entries, plus, per step, ``W`` times the uncertain entries that fired:
        with the compiled sampler (:attr:`sampler`) as the sum of the weight columns of the entries that fired; with
        the torch sampler either as dense spike chunks and one GEMM each (dense path, when the uncertain entries times
        ``C`` reach :data:`DENSE_FROM` of the ``B x F`` entries), or as that sum (sparse path). ``noise_std > 0`` (the spike-noise robustness probe) adds ``W n_t`` with ``n_t ~ N(0,
        noise_std^2)`` per entry and step, from the global generator."""
        if len(self.p_shape) != 2:
            raise ValueError(f"linear needs spikes of [B, F] features, got features of shape {self.p_shape}")
        p = self._take()
        rows, features = p.shape
        out = weight.shape[0]
        certain = F.linear((p >= 1.0).to(weight.dtype), weight, bias)
        if self.sampler == "compiled":
            flat, q = _uncertain(p)
            sampled, fired = _CompiledCurrents.apply(weight.to(p.dtype), flat, q, rows, self.steps, self._seed())
            self._count(p, fired.sum())
        else:
            sampled = self._torch_currents(p, weight)
        if noise_std > 0.0:
            sampled = sampled.expand(self.T, rows, out) + _noise_currents(self.T, rows, features, weight, noise_std)
        # under autocast F.linear gives bf16/fp16 while the sparse sum stays fp32: return what F.linear would
        return (certain + sampled.to(certain.dtype)).expand(self.T, rows, out)

    def _torch_currents(self, p: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """``[steps, rows, C]`` currents of the uncertain entries drawn by the torch sampler, chunk by chunk, on the
        dense path or the sparse one (:data:`DENSE_FROM`)."""
        rows, features = p.shape
        out = weight.shape[0]
        dense = int(((p > 0) & (p < 1)).sum()) * out >= DENSE_FROM * rows * features
        weight_t = weight.t()
        chunks = []
        if dense:
            for steps, block, index, draws in self._draw(p, 1, True):
                n, m = draws.shape[0], block.stop - block.start
                spikes = draws.new_zeros(n, m * features).scatter_(1, index.expand_as(draws), draws)
                # W S^T rather than S W^T: the faster orientation of this skinny product (and of its gradient)
                currents = torch.mm(weight, spikes.view(n * m, features).t())
                chunks.append((steps, block, currents.view(out, n, m).permute(1, 2, 0)))
        else:
            for steps, block, index, draws in self._draw(p, out, False):
                index_rows, cols = torch.div(index, features, rounding_mode="floor"), index % features
                fired = draws[:, :, None] * weight_t[cols][None]  # [steps, uncertain, C]
                sampled = fired.new_zeros(draws.shape[0], block.stop - block.start, out)
                chunks.append((steps, block, sampled.index_add_(1, index_rows, fired)))
        return _assemble(chunks, self.steps, rows)


def _sampler_for(p: torch.Tensor) -> str:
    """``"compiled"`` where the compiled sampler runs and pays (CPU, float32/64, :data:`COMPILED_FROM` of the
    entries uncertain), else ``"torch"``."""
    if p.device.type != "cpu" or p.dtype not in (torch.float32, torch.float64) or p.numel() == 0:
        return "torch"
    if float(((p > 0) & (p < 1)).sum()) < COMPILED_FROM * p.numel():
        return "torch"
    return "compiled" if EXTENSION.unavailable_reason() is None else "torch"


def _uncertain(p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The row-major flat positions of the uncertain entries of ``p [rows, features]`` and their probabilities."""
    flat = ((p > 0) & (p < 1)).flatten().nonzero().squeeze(1)
    return flat, p.flatten()[flat].contiguous()


class _CompiledCurrents(torch.autograd.Function):
    """``[steps, rows, C]`` currents ``W s_t`` of the uncertain entries' spikes, drawn by the compiled sampler
    with key ``seed``, and the number of spikes per step. When the weight needs a gradient, the spikes are kept as
    one byte per uncertain entry and step for the backward pass."""

    @staticmethod
    def forward(ctx, weight, flat, q, rows, steps, seed):
        record = weight.requires_grad
        currents, fired, bits = EXTENSION.module().currents(
            weight.detach().t().contiguous(), flat, q, rows, steps, seed, record
        )
        ctx.save_for_backward(flat, bits)
        ctx.features = weight.shape[1]
        ctx.mark_non_differentiable(fired)
        return currents, fired

    @staticmethod
    @once_differentiable("the compiled Poisson sampler's backward (fsnn.models.poisson)")
    def backward(ctx, grad, _fired):
        flat, bits = ctx.saved_tensors
        grad_weight_t = EXTENSION.module().currents_backward(grad.contiguous(), flat, bits, ctx.features)
        return grad_weight_t.t(), None, None, None, None, None


def _assemble(chunks: list[tuple[slice, slice, torch.Tensor]], steps: int, rows: int) -> torch.Tensor:
    """The ``[steps, rows, C]`` tensor of chunks that tile it in stream order (whole steps, or one step's rows)."""
    by_step: dict[int, list[torch.Tensor]] = {}
    for step, _block, value in chunks:
        by_step.setdefault(step.start, []).append(value)
    return torch.cat([torch.cat(parts, 1) if len(parts) > 1 else parts[0] for parts in by_step.values()], 0)


def _noise_currents(T: int, rows: int, features: int, weight: torch.Tensor, std: float) -> torch.Tensor:
    """``W n_t`` for Gaussian spike noise ``n_t ~ N(0, std^2)`` on every ``[rows, features]`` entry of each of ``T``
    steps, drawn a block of rows at a time."""
    block = max(1, CHUNK_ELEMENTS // (T * features))
    parts = [
        F.linear(
            std * torch.randn(T, min(block, rows - r0), features, device=weight.device, dtype=weight.dtype), weight
        )
        for r0 in range(0, rows, block)
    ]
    return torch.cat(parts, 1)


@checked
def poisson_encode(
    x: torch.Tensor, T: Count, generator: torch.Generator | None = None, frozen: Flag = False
) -> PoissonSpikes:
    """:class:`PoissonSpikes` of ``x``: probability ``clamp(x, 0, 1)`` at each of ``T`` steps (SpikingJelly's
    ``PoissonEncoder``, ``rand <= x``, which on z-scored features is exactly this clamp: negative features never fire,
    features >= 1 always fire). ``generator`` makes the draw reproducible without touching the global RNG;
    ``.dense()`` gives the ``[T, *x.shape]`` spike tensor, ``.linear(weight, bias)`` a layer's currents."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() == 0:
        raise ValueError(
            f"x must be a floating-point tensor of at least one dimension, got "
            f"{type(x).__name__}{'' if not isinstance(x, torch.Tensor) else f' {tuple(x.shape)}'}"
        )
    finite = torch.isfinite(x)
    if not bool(finite.all()):  # a NaN probability would silently never fire
        raise ValueError(
            f"x must be finite to be encoded as spike probabilities, got {int((~finite).sum())} NaN or "
            f"infinite of its {x.numel()} values (the first at index "
            f"{tuple((~finite).nonzero()[0].tolist())})"
        )
    return PoissonSpikes(x.detach().clamp(0.0, 1.0), T, generator, frozen)


class PoissonEncoder(nn.Module):
    """Module form of :func:`poisson_encode` (so that firing-rate probes can see the input spikes). :attr:`samplers`
    holds the samplers that drew its spikes in this process (``"compiled"``, ``"torch"``): a seeded run's numbers
    depend on them, so a run records them (:func:`describe_encoders`)."""

    emits_spikes = True  # counted by fsnn.models.probes.SpikeRateMeter

    @checked
    def __init__(self, T: Count, frozen: Flag = False):
        super().__init__()
        self.T, self.frozen = T, frozen
        self.generator: torch.Generator | None = None
        self.samplers: set[str] = set()

    def extra_repr(self) -> str:
        return f"T={self.T}" + (", frozen=True" if self.frozen else "")

    def forward(self, x: torch.Tensor) -> PoissonSpikes:
        spikes = poisson_encode(x, self.T, self.generator, self.frozen)
        self.samplers.add(spikes.sampler)
        return spikes


def describe_encoders(model: nn.Module) -> dict[str, dict]:
    """What a run's record says of every spike encoder of ``model`` (``{module name: entry}``): its class, ``T``,
    whether it repeats one pattern (``frozen``) and the samplers that drew its spikes (sorted; empty before any
    forward), since the compiled and the torch sampler draw different streams from one seed."""
    return {
        name: {"type": type(m).__name__, "T": m.T, "frozen": m.frozen, "samplers": sorted(m.samplers)}
        for name, m in model.named_modules()
        if isinstance(m, PoissonEncoder)
    }


def add_spike_noise(spikes: torch.Tensor, std: float) -> torch.Tensor:
    """Robustness probe: Gaussian noise of standard deviation ``std`` added to a spike tensor (values stay real)."""
    if std <= 0.0:
        return spikes
    return spikes + std * torch.randn_like(spikes)
