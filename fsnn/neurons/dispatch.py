"""How a fractional neuron runs a call: which engine (:meth:`EngineDispatch.resolve_engine`), the history tensors
it is fed (made once per sequence length, device and dtype while nothing learns) and the call itself, outside any
``torch.compile`` graph.

On CUDA tensors ``engine="auto"`` runs the fused Triton kernels of :mod:`fsnn.neurons.triton_kernels` (one kernel
per direction instead of a few small ops per time step); on CPU tensors, up to ``cpu_kernels.AUTO_MAX_STEPS`` steps,
the compiled loops of :mod:`fsnn.neurons.cpu_kernels` where they can be built; everywhere else the torch engines.

:class:`EngineDispatch` is a base of :class:`fsnn.neurons.fractional.FractionalNeuron`, which holds what it reads:
the options (``engine``, ``method``, ``memory``, ``dt``, ``tol``, ``convention``, the reset and the surrogate), the
parameters (``alpha``, ``tau``, ``threshold``) and their caches.
"""

from __future__ import annotations

import torch

from fsnn.neurons import cpu_kernels, triton_kernels as kernels
from fsnn.neurons.dynamics import spikede_sequence
from fsnn.neurons.engines import EngineConfig, FractionalNeuronFunction
from fsnn.neurons.memory import SOE_METHODS, kernel_for, soe_bank

#: why the engines run outside a torch.compile graph, and what that allows
OUTSIDE_GRAPH = (
    "its engines run outside the graph (they read tau, the threshold and the kernel as numbers and run "
    "Python, compiled or Triton loops): torch.compile runs it with a graph break at each neuron layer; "
    "torch.compile(fullgraph=True) and torch.export cannot"
)


class EngineDispatch:
    """The engine choice and the call of a :class:`fsnn.neurons.fractional.FractionalNeuron` (module docstring)."""

    block = 32  # steps per block of the torch engines
    soe_head = 9  # the SOE engine keeps lags < soe_head exact (the fused kernel holds them in registers)

    def _soe_alpha(self, alpha: float) -> float:
        # banks are cached per 1e-3 of alpha (verified at half the tolerance) so that a learning
        # alpha does not rebuild one each step; never round an alpha < 1 up to exactly 1
        return 1.0 if alpha == 1.0 else min(round(alpha, 3), 0.999)

    def _fused(self, device: torch.device | None) -> bool:
        """Whether this call runs the Triton kernels (``auto``: on CUDA tensors when Triton is there)."""
        if self.engine == "triton":
            reason = kernels.unavailable_reason(device or torch.device("cpu"))
            if reason is not None:
                raise ValueError(f"engine='triton' cannot run here: {reason}; use engine='auto'")
            return True
        return (
            self.engine == "auto"
            and device is not None
            and device.type == "cuda"
            and kernels.unavailable_reason(device) is None
        )

    def _compiled(self, steps: int, device: torch.device | None) -> bool:
        """Whether this call runs the compiled CPU loops (``auto``: on CPU tensors, up to
        ``cpu_kernels.AUTO_MAX_STEPS`` steps, where they can be built)."""
        on_cpu = device is None or device.type == "cpu"
        if self.engine == "cpp":
            reason = cpu_kernels.unavailable_reason() if on_cpu else f"they take CPU tensors, got {device.type!r}"
            if reason is not None:
                raise ValueError(f"engine='cpp' cannot run here: {reason}; use engine='auto'")
            return True
        return (
            self.engine == "auto"
            and on_cpu
            and steps <= cpu_kernels.AUTO_MAX_STEPS
            and cpu_kernels.unavailable_reason() is None
        )

    def resolve_engine(self, steps: int, alpha: float, device: torch.device | None = None):
        """``(engine, soe_bank or None)`` for a sequence of ``steps`` on ``device``.

        The fused kernels (``triton-direct`` / ``triton-soe``) follow the rule of ``auto``, except that they
        stay exact only while the whole history fits their registers (``kernels.R_DIRECT`` lags).
        """
        fused = self._fused(device)
        if not fused and self._compiled(steps, device):
            return "cpp-direct", None
        prefix = "triton-" if fused else ""
        want = "auto" if fused else self.engine
        if want == "direct" or self.memory is not None or self.method not in SOE_METHODS:
            return prefix + "direct", None
        # exact when the whole history is cheap: it fits the torch engine's two blocks, or the kernel's registers
        if want == "auto" and steps <= (kernels.R_DIRECT + 1 if fused else 2 * self.block):
            return prefix + "direct", None
        head = min(self.soe_head, 2 * self.block)  # the torch engine reads exact lags from its first two blocks
        bank = soe_bank(
            self.method, self._soe_alpha(alpha), max(steps, 2 * self.block + 1), self.dt, head, self.tol / 2
        )
        if bank is None:
            if want == "soe":
                raise ValueError(
                    f"engine='soe': no exponential bank reaches tol={self.tol} for alpha={alpha:.4g}; "
                    "raise tol or use engine='direct'"
                )
            return prefix + "direct", None
        return prefix + "soe", bank

    def _history_tensors(self, steps: int, like: torch.Tensor):
        """``(engine, k_head, soe_w, decays, tau, theta)`` in ``like``'s device and dtype.

        Made once per sequence length, device and dtype while nothing learns: the per-call
        alternative costs host-device copies and a synchronisation on every forward.
        """
        fixed = self._fixed
        key = (steps, self.block, self.engine, like.device, like.dtype)
        if fixed and key in self._prepared:
            return self._prepared[key]
        alpha = self.alpha
        engine, bank = self.resolve_engine(steps, self._alpha_host if fixed else self._read_learned(alpha), like.device)
        if bank is None:
            length = steps if self.memory is None else min(steps, self.memory + 1)
            k_head = kernel_for(self.method, alpha, length, self.dt, like)
            soe_w, decays = like.new_zeros(0), None
        else:
            k_head = kernel_for(self.method, alpha, bank.head, self.dt, like)
            soe_w, decays = bank.weights(alpha).to(like), bank.decays(like)
        out = (engine, k_head, soe_w, decays, self.tau.to(like), self.threshold.to(like))
        if fixed:
            self._prepared[key] = out
        return out

    @torch.compiler.disable(reason=OUTSIDE_GRAPH)
    def _integrate(self, x: torch.Tensor, return_state: bool):
        """:meth:`forward` past its checks: the engines, outside any ``torch.compile`` graph (they read parameters
        and kernel weights as numbers, keep caches and run compiled loops or Triton kernels)."""
        if torch.compiler.is_exporting():
            raise RuntimeError(f"torch.export cannot export {type(self).__name__}: {OUTSIDE_GRAPH}")
        shape, in_dtype = x.shape, x.dtype
        T = shape[0]
        flat = x.reshape(T, -1)
        if self.convention == "spikede":
            spikes, v = self._spikede(flat)
        else:
            fused = self._fused(flat.device)
            if flat.dtype in (torch.float16, torch.bfloat16) and not fused:
                flat = flat.float()  # the history sums need fp32 accumulation (the kernels do it in registers)
            state = flat.dtype if flat.dtype in (torch.float32, torch.float64) else torch.float32
            engine, k_head, soe_w, decays, tau, theta = self._history_tensors(T, flat.new_empty(0, dtype=state))
            self.last_engine = engine
            cfg = EngineConfig(
                leak=self.leak,
                reset=self.reset,
                v_reset=self.v_reset,
                detach_reset=self.detach_reset,
                surrogate=self.surrogate,
                surrogate_scale=self.surrogate_scale,
                block=self.block,
                memory=self.memory,
                decays=decays,
                return_state=return_state,
                backend="triton" if fused else "cpp" if engine.startswith("cpp-") else "torch",
            )
            spikes, v = FractionalNeuronFunction.apply(flat.contiguous(), tau, theta, k_head, soe_w, cfg)
        spikes = spikes.reshape(shape).to(in_dtype)
        if return_state:
            return spikes, v.reshape(shape).to(in_dtype)
        return spikes

    def _spikede(self, flat: torch.Tensor):
        if not self._fixed:
            self._read_learned(self.alpha)
        self.last_engine = "spikede"
        if flat.dtype in (torch.float16, torch.bfloat16):
            flat = flat.float()
        T = flat.shape[0]
        steps = T if self.memory is None else min(T, self.memory)
        kernel = kernel_for(self.method, self.alpha, steps, self.dt, flat)
        if steps < T:
            kernel = torch.cat([kernel, kernel.new_zeros(T - steps)])
        return spikede_sequence(
            flat,
            kernel,
            tau=self.tau.to(flat),
            threshold=self.threshold.to(flat),
            leak=self.leak,
            surrogate=self.surrogate,
            scale=self.surrogate_scale,
        )
