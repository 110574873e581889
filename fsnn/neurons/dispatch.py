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

from dataclasses import replace

import torch

from fsnn.neurons import cpu_kernels, stepping, triton_kernels as kernels
from fsnn.neurons.base import check_step_input
from fsnn.neurons.dynamics import spikede_sequence
from fsnn.neurons.engines import EngineConfig, FractionalNeuronFunction
from fsnn.neurons.memory import SOE_METHODS, kernel_for, soe_bank
from fsnn.neurons.state import HistoryState

#: the number of steps a stream's exponential bank is verified over (30 modes at alpha = 0.5 and the default tol)
STREAM_HORIZON = 1 << 16
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
        bank = self._soe_bank(alpha, steps)
        if bank is None:
            if want == "soe":
                raise ValueError(
                    f"engine='soe': no exponential bank reaches tol={self.tol} for alpha={alpha:.4g}; "
                    "raise tol or use engine='direct'"
                )
            return prefix + "direct", None
        return prefix + "soe", bank

    def _soe_bank(self, alpha: float, steps: int):
        """The exponential bank for sequences of up to ``steps`` steps (``None`` where none reaches ``tol``)."""
        head = min(self.soe_head, 2 * self.block)  # the torch engine reads exact lags from its first two blocks
        return soe_bank(
            self.method, self._soe_alpha(alpha), max(steps, 2 * self.block + 1), self.dt, head, self.tol / 2
        )

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

    def _engine_config(self, decays, **call) -> EngineConfig:
        """The engines' configuration of this neuron's options, with the SOE ``decays`` (``None``: exact) and what
        differs per call (``return_state``, ``backend``, ``chunk``)."""
        return EngineConfig(
            leak=self.leak,
            reset=self.reset_mode,
            v_reset=self.v_reset,
            detach_reset=self.detach_reset,
            surrogate=self.surrogate,
            surrogate_scale=self.surrogate_scale,
            block=self.block,
            memory=self.memory,
            decays=decays,
            **call,
        )

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
            backend = "triton" if fused else "cpp" if engine.startswith("cpp-") else "torch"
            cfg = self._engine_config(decays, return_state=return_state, backend=backend)
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
        spikes, v, _ = spikede_sequence(flat, kernel, **self._spikede_options(flat))
        return spikes, v

    def _spikede_options(self, like: torch.Tensor) -> dict:
        return {
            "tau": self.tau.to(like),
            "threshold": self.threshold.to(like),
            "leak": self.leak,
            "surrogate": self.surrogate,
            "scale": self.surrogate_scale,
        }

    # -- a run continued from a state (fsnn.neurons.base, fsnn.neurons.stepping) -------------------------------------
    def _state_kind(self) -> str:
        """The kind of state this neuron keeps (:mod:`fsnn.neurons.state`): ``spikede`` for the toolbox's
        convention, ``window`` with a ``memory``, ``soe`` where the engine is ``soe`` or ``auto`` can sum
        exponentials (a stream has no end, so ``auto`` takes the constant state), ``exact`` otherwise."""
        if self.convention == "spikede":
            return "spikede"
        if self.memory is not None:
            return "window"
        if self.engine == "soe" or (self.engine == "auto" and self.method in SOE_METHODS):
            return "soe"
        return "exact"

    def initial_state(self, x: torch.Tensor, horizon: int | None = None) -> HistoryState:
        """The state at rest for steps shaped, typed and placed like ``x`` (one step's input ``[B, ...]``).

        Args:
            x: one step's input (only its shape, dtype and device are read).
            horizon: for the ``soe`` kind, the number of steps its exponential bank is verified over (relative
                error within ``tol``); default ``None``: :data:`STREAM_HORIZON`. Past it the slowest mode still
                decays, and the error grows slowly. A whole-sequence call of ``T`` steps uses the bank of
                ``horizon=T``: a state made with it continues exactly that call.
        """
        check_step_input(x)
        self._check_runnable(x)
        dtype = x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32
        n = x.numel()
        v = torch.full((n,), self.v_reset if self.reset_mode == "hard" else 0.0, dtype=dtype, device=x.device)
        kind, bank, modes, rows = self._state_kind(), None, None, 0
        if kind == "soe":
            alpha = self._alpha_host if self._fixed else self._read_learned(self.alpha)
            bank = self._soe_bank(alpha, horizon or STREAM_HORIZON)
            if bank is None:
                raise ValueError(
                    f"no exponential bank reaches tol={self.tol} for alpha={alpha:.4g}: raise tol, or give the "
                    "neuron engine='direct' (an exact state that grows with the steps)"
                )
            rows, modes = bank.head, v.new_zeros(bank.size, n)
        elif kind == "window" or (kind == "spikede" and self.memory is not None):
            rows = self.memory
        return HistoryState(
            shape=tuple(x.shape), steps=0, v=v, history=v.new_zeros(rows, n), modes=modes, kind=kind, bank=bank
        )

    def _check_state_kind(self, state: HistoryState) -> None:
        kind = self._state_kind()
        fits = state.kind == kind and (
            state.bank is None or (state.bank.method, state.bank.dt) == (self.method, self.dt)
        )
        if kind == "window" or (kind == "spikede" and self.memory is not None):
            fits = fits and state.history.shape[0] == self.memory
        if not fits:
            raise ValueError(
                f"state was made by a neuron with another history ({state.kind!r} state); this "
                f"{type(self).__name__} keeps a {kind!r} state (engine={self.engine!r}, method={self.method!r}, "
                f"memory={self.memory}): make one with its initial_state"
            )

    @torch.compiler.disable(reason=OUTSIDE_GRAPH)
    def _chunk(self, x: torch.Tensor, state: HistoryState):
        """``(spikes, v, state)`` of ``x`` ``[T, *state.shape]`` continued from ``state`` (module
        :mod:`fsnn.neurons.stepping`): one step through :func:`fsnn.neurons.stepping.charge_fire_reset`, longer chunks
        through the torch engines with the state's history as their prior."""
        shape, in_dtype, T = x.shape, x.dtype, x.shape[0]
        flat = x.reshape(T, -1).to(state.dtype)
        self.last_engine = f"state-{state.kind}"
        if state.kind == "spikede":
            spikes, v, currents = self._spikede_chunk(flat, state)
            history = currents[-state.history.shape[0] :] if self.memory is not None else currents
            new = replace(state, steps=state.steps + T, v=v[-1], history=history)
        else:
            spikes, v, new = self._history_chunk(flat, state)
        return spikes.reshape(shape).to(in_dtype), v.reshape(shape).to(in_dtype), new

    def _spikede_chunk(self, flat: torch.Tensor, state: HistoryState):
        if not self._fixed:
            self._read_learned(self.alpha)
        past = state.history.shape[0]
        steps = past + flat.shape[0]
        window = steps if self.memory is None else min(steps, self.memory)
        kernel = kernel_for(self.method, self.alpha, window, self.dt, flat)
        if window < steps:
            kernel = torch.cat([kernel, kernel.new_zeros(steps - window)])
        return spikede_sequence(flat, kernel, past=state.history, v=state.v, **self._spikede_options(flat))

    def _chunk_tensors(self, T: int, rows: int, bank, like: torch.Tensor):
        """``(k_head, soe_w, decays, tau, theta, drive, lags, read, shift)`` of a chunk of ``T`` steps after ``rows``
        history rows (:mod:`fsnn.neurons.stepping`; ``read`` and ``shift`` only with a ``bank``), in ``like``'s
        device and dtype. Made once per chunk size, history length, bank, device and dtype while nothing learns,
        since a stream asks for the same ones at every step; with learned parameters each call builds them, so
        that autograd reaches alpha, tau and the threshold."""
        fixed = self._fixed
        key = ("chunk", T, rows, bank, like.device, like.dtype)
        if fixed and key in self._prepared:
            return self._prepared[key]
        alpha = self.alpha
        if not fixed:
            self._read_learned(alpha)
        tau, theta = self.tau.to(like), self.threshold.to(like)
        if bank is not None:
            k_head = kernel_for(self.method, alpha, bank.head, self.dt, like)
            soe_w, decays = bank.weights(alpha).to(like), bank.decays(like)
            lags = torch.arange(bank.head, T + rows, device=like.device, dtype=like.dtype)
            kernel = torch.cat([k_head, (decays[None, :] ** lags[:, None]) @ soe_w])[: max(T + rows, 1)]
            read = stepping.mode_read(soe_w / k_head[0], decays, T)
            shift = stepping.mode_shift(decays, rows + T, rows)
        else:
            # the exact kernel, at a power-of-two length so that a fixed one is cached across steps
            length = 1 << max(T + rows - 1, 1).bit_length()
            if self.memory is not None:
                length = min(length, self.memory + 1)
            k_head = kernel_for(self.method, alpha, length, self.dt, like)
            kernel = torch.cat([k_head, k_head.new_zeros(max(0, T + rows - length))])
            soe_w, decays, read, shift = like.new_zeros(0), None, None, None
        k0 = kernel[0]
        lags = stepping.toeplitz_rows(kernel / k0, T, rows)
        out = (k_head, soe_w, decays, tau, theta, k0 / tau, lags, read, shift)
        if fixed and (bank is not None or self.memory is not None):  # an exact history grows: a new key each step
            self._prepared[key] = out
        return out

    def _history_chunk(self, flat: torch.Tensor, state: HistoryState):
        T, rows = flat.shape[0], state.history.shape[0]
        bank = state.bank
        k_head, soe_w, decays, tau, theta, drive, lags, read, shift = self._chunk_tensors(T, rows, bank, flat)
        prior = stepping.prior(state.history, lags, state.modes, read)
        v_init = self.v_reset if self.reset_mode == "hard" else 0.0
        if T == 1:
            spikes, v, gamma = stepping.charge_fire_reset(
                prior[0] + v_init,
                flat[0],
                state.v,
                drive=drive,
                offset=drive * v_init if self.leak else 0.0,
                c_leak=drive if self.leak else None,
                threshold=theta,
                reset=self.reset_mode,
                v_reset=self.v_reset,
                detach_reset=self.detach_reset,
                surrogate=(self.surrogate, self.surrogate_scale),
            )
            spikes, v, gamma = spikes[None], v[None], gamma[None]
        else:
            cfg = self._engine_config(decays, chunk=True)
            head = k_head if bank is not None else k_head[: min(T, len(k_head))]
            spikes, v, gamma = FractionalNeuronFunction.apply(
                flat.contiguous(), tau, theta, head, soe_w, cfg, prior, state.v
            )
        past = torch.cat([state.history, gamma])
        if bank is not None:
            modes = stepping.advance_modes(state.modes, shift, past)
            new = replace(state, steps=state.steps + T, v=v[-1], history=past[-rows:], modes=modes)
        else:
            history = past if self.memory is None else past[-rows:]
            new = replace(state, steps=state.steps + T, v=v[-1], history=history)
        return spikes, v, new
