"""Fractional-order spiking neurons (f-LIF, f-IF) as thin multi-step ``nn.Module`` s.

The equations live in :mod:`fsnn.neurons.dynamics`, the kernels in :mod:`fsnn.neurons.memory`, the fast
forward/backward in :mod:`fsnn.neurons.engines` and the choice of one in :mod:`fsnn.neurons.dispatch`; this module
validates arguments and holds the (optionally learnable) parameters.

``FractionalLIF`` solves ``tau D^alpha U = -(U - v_rest) + I`` and ``FractionalIF`` solves
``tau D^alpha U = I`` (Caputo derivative of order ``alpha`` in (0, 1]); output step ``k``
(0-based) is the state at ``t = (k + 1) dt``, with spikes at ``U >= threshold``. ``alpha = 1``
is exactly SpikingJelly's ``LIFNode`` / ``IFNode`` (decay_input=True). Input ``[T, B, ...]`` -> spikes ``[T, B, ...]``; all state lives
inside one call, so there is nothing to reset between batches. They also run one step or one chunk at a time from a
state (:mod:`fsnn.neurons.base`, :mod:`fsnn.neurons.stepping`).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from fsnn.checks import (
    Flag,
    OptionError,
    Positive,
    Real,
    checked,
    integer,
    number,
    one_of,
    option_check,
)
from fsnn.neurons import cpu_kernels, triton_kernels as kernels
from fsnn.neurons.base import SpikingNeuron
from fsnn.neurons.dispatch import EngineDispatch
from fsnn.neurons.memory import METHODS, SOE_METHODS, stable_tau
from fsnn.neurons.state import HistoryState
from fsnn.neurons.surrogate import SURROGATES, Surrogate, check_surrogate

ENGINES = ("auto", "direct", "soe", "triton", "cpp")
CONVENTIONS = ("fsnn", "spikede")
RESETS = ("soft", "hard")
Alpha = number("a number in (0, 1]", lambda v: 0 < v <= 1)  # the order of the Caputo derivative
#: the longest history window: the stability bound of a window is computed on a grid of 16 points per lag
#: (:func:`fsnn.neurons.memory.stable_tau`), and a window longer than any sequence it meets is memory=None
MAX_MEMORY = 1 << 16
Memory = integer(f"an integer in [1, {MAX_MEMORY}]", lambda v: 1 <= v <= MAX_MEMORY)
Reset = one_of(*RESETS)


def _checked(option_type, name: str, value):
    """``value`` (a number or a one-element tensor, as an assignment may give it) checked as the constructor checks
    an argument of ``option_type``: one ``ValueError`` naming ``name`` and what it takes."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    return option_check(option_type)[0](name, value)


def inverse_softplus(y: float) -> float:
    """``x`` with ``softplus(x) = y``: the raw value of a parameter kept positive through a softplus."""
    return y + math.log(-math.expm1(-y))


#: the range a learned alpha is held in: the constructor's start values, away from 0 (where the kernels' Gamma
#: functions are inf and NaN); 1 is reached within 1e-4, as close as the sigmoid's gradient lets it get anyway
LEARNED_ALPHA = (1e-4, 1 - 1e-4)
#: a learned threshold is held at or above this share of its starting value: softplus reaches 0 in float32 (below
#: a raw value of about -104), and a threshold of 0 fires at every step
LEARNED_THRESHOLD = 1e-4
#: the domains of the raw parameters the learned ones are made of
RAW_DOMAINS = {
    "alpha_raw": f"a finite number (the learned alpha is sigmoid(alpha_raw), held in [{LEARNED_ALPHA[0]:g}, "
    f"{LEARNED_ALPHA[1]:g}])",
    "tau_raw": "a finite number (the learned tau is softplus(tau_raw), held above the stability bound)",
    "theta_raw": f"a finite number (the learned threshold is softplus(theta_raw), held at or above {LEARNED_THRESHOLD:g} "
    "times its starting value)",
}
#: a learned or alpha-dependent tau is held this far (relatively) above the stability bound, so that it stays
#: strictly above it after a rounding to float32 (a relative 6e-8)
TAU_MARGIN = 1e-6


class Confine(torch.autograd.Function):
    """``min(max(x, lo), hi)`` (``lo`` / ``hi``: floats, ``None`` for no bound) with a projected gradient.

    Inside the bounds it is the identity, values and gradients alike. Where it clamps, a gradient that would
    move ``x`` back inside (by a descent step ``-grad``) passes and one that would move it further out is zero:
    a parameter held at a bound can leave it, which a plain clamp's zero gradient would never let it do, and does
    not drift further out, which a straight-through gradient would let it do."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        below = x < lo if lo is not None else torch.zeros_like(x, dtype=torch.bool)
        above = x > hi if hi is not None else torch.zeros_like(x, dtype=torch.bool)
        ctx.save_for_backward(below, above)
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad):
        below, above = ctx.saved_tensors
        return grad.masked_fill((below & (grad > 0)) | (above & (grad < 0)), 0), None, None


class FractionalNeuron(EngineDispatch, SpikingNeuron):
    """Shared implementation of :class:`FractionalLIF` (``leak=True``) and :class:`FractionalIF`: the options and the
    (optionally learned) parameters; :class:`fsnn.neurons.dispatch.EngineDispatch` picks and runs the engine."""

    #: SpikingJelly's and snnTorch's argument names, refused in one line that names fsnn's equivalent
    foreign_options = {
        "v_threshold": "SpikingJelly's v_threshold is threshold here",
        "v_reset=None": "SpikingJelly's soft reset (v_reset=None) is reset='soft' here (the default); v_reset is the "
        "potential of reset='hard'",
        "surrogate_function": "SpikingJelly's surrogate_function is surrogate (a name: "
        f"{', '.join(map(repr, SURROGATES))}) and surrogate_scale (its alpha) here",
        "spike_grad": "snnTorch's spike_grad is surrogate (a name: "
        f"{', '.join(map(repr, SURROGATES))}) and surrogate_scale (its slope) here",
        "beta": "snnTorch's beta (the decay per step) is tau here: this LIF decays by 1 - 1/tau per step, so "
        "tau = 1 / (1 - beta) (and it divides the input by tau, which snnTorch does not)",
    }

    state_type = HistoryState

    #: the hard reset's potential, which a soft reset ignores: a config's schema refuses it changed under a soft reset
    #: (fsnn.checks.check_mode_options)
    mode_options = {"v_reset": ("reset", ("hard",))}

    @checked
    def __init__(
        self,
        alpha: Alpha = 0.5,
        tau: Positive = 2.0,
        threshold: Positive = 1.0,
        reset: Reset = "soft",
        v_reset: Real = 0.0,
        dt: Positive = 1.0,
        method: one_of(*METHODS) = "pred",
        memory: Memory | None = None,
        engine: one_of(*ENGINES) = "auto",
        surrogate: Surrogate = "sigmoid",
        surrogate_scale: Positive | None = None,
        detach_reset: Flag = False,
        learn_alpha: Flag = False,
        learn_tau: Flag = False,
        learn_threshold: Flag = False,
        convention: one_of(*CONVENTIONS) = "fsnn",
        tol: Positive = 1e-6,
    ):
        r"""Every argument is a keyword with a default; a wrong type or value is a ``ValueError`` naming the argument
        and what it takes (a SpikingJelly or snnTorch name such as ``v_threshold`` or ``beta`` names fsnn's own).

        Args:
            alpha: the order $\alpha$ of the Caputo derivative, a number in $(0, 1]$ (type ``Alpha``); default
                ``0.5``. Smaller orders remember longer (history weights decay like $m^{\alpha - 1}$); ``1`` is the
                ordinary first-order neuron, SpikingJelly's ``LIFNode`` / ``IFNode`` exactly. With ``learn_alpha``
                it is where the learned order starts (clipped to $[10^{-4}, 1 - 10^{-4}]$).
            tau: the membrane time constant $\tau$, a number $> 0$; default ``2.0`` (``FractionalIF``: ``1.0``).
                The input is divided by it. A leaky neuron also needs ``tau`` above the stability bound of the
                explicit scheme, :func:`fsnn.neurons.memory.stable_tau` (``dt / 2`` at ``alpha = 1``, $(dt/2)^{\alpha}$
                for ``gl``); at or below it the constructor refuses it, naming the bound.
            threshold: the firing threshold $\vartheta$, a number $> 0$; default ``1.0``. A step spikes when the
                membrane reaches it ($U \ge \vartheta$).
            reset: what a spike does to the membrane, ``"soft"`` (default: subtract the threshold) or ``"hard"``
                (set it to ``v_reset``); either way the reset enters the fractional history as a current.
            v_reset: the potential of a hard reset, any finite number; default ``0.0``. With ``reset="hard"`` it is
                also the resting and the starting potential; a soft reset ignores it (rest and start at 0).
            dt: the time step, a number $> 0$; default ``1.0``. The history kernel scales as $dt^{\alpha}$.
            method: the discretisation of the Caputo derivative (type ``one_of(*METHODS)``), one of ``"pred"``
                (default: the paper's fractional Adams-Bashforth predictor), ``"gl"`` (Grünwald-Letnikov) or
                ``"l1"`` (the L1 scheme); their kernels are in :mod:`fsnn.neurons.memory`.
            memory: how many past steps the history keeps, ``None`` (default: the whole sequence) or an integer in
                $[1, 65536]$ (the short-memory principle: lags beyond it are dropped). Not with ``engine="soe"``.
            engine: how the history sum is computed, one of ``"auto"`` (default: the fastest exact-enough one,
                fused Triton kernels on CUDA tensors, the compiled CPU loops on CPU tensors up to 256 steps),
                ``"direct"`` (exact, $O(T^2)$ work in blocked matrix products), ``"soe"`` (a sum of about 20
                exponentials within ``tol``, $O(T)$ work; ``pred`` and ``gl`` only), ``"triton"`` (the fused GPU
                kernels) or ``"cpp"`` (the compiled CPU loops, exact as ``direct``); the last two are an error where
                they cannot run.
            surrogate: the surrogate gradient of the spike's step function, one of ``"sigmoid"`` (default),
                ``"arctan"``, ``"piecewise_linear"`` or ``"gaussian"`` (formulas in :mod:`fsnn.neurons.surrogate`).
            surrogate_scale: the surrogate's sharpness, ``None`` (default: the family's own, 5 for sigmoid, 2 for
                arctan, 1 for piecewise_linear and gaussian) or a number $> 0$.
            detach_reset: ``True`` leaves the reset out of the backward pass (SpikingJelly's ``detach_reset``);
                default ``False``.
            learn_alpha: ``True`` makes ``alpha`` a trained parameter, kept in $(0, 1)$ by a sigmoid; default
                ``False``.
            learn_tau: ``True`` makes ``tau`` a trained parameter, kept $> 0$ by a softplus; default ``False``.
            learn_threshold: ``True`` makes ``threshold`` a trained parameter, kept $> 0$ by a softplus and held at
                or above $10^{-4}$ times its starting value; default ``False``.
            convention: the numerics, ``"fsnn"`` (default: spike on the charged membrane, exact reset current) or
                ``"spikede"`` (the official toolbox's: spike on a one-step look-ahead, reset as a
                $\vartheta / \tau$ current), for replaying its published pipelines; see :mod:`fsnn.neurons.dynamics`.
            tol: the relative error, a number $> 0$, that the sum of exponentials of ``engine="soe"`` (or of
                ``"auto"`` when it picks it) must meet on the kernel over the whole sequence; default ``1e-6``.
        """
        super().__init__()
        self.dt, self.tol = dt, tol
        self.surrogate_scale = check_surrogate(surrogate, surrogate_scale)
        self.check_combinations(
            {
                "alpha": alpha,
                "tau": tau,
                "dt": dt,
                "method": method,
                "memory": memory,
                "engine": engine,
                "convention": convention,
            }
        )
        self.v_reset = v_reset
        self.reset_mode, self.method, self.memory = reset, method, memory
        self.engine, self.surrogate, self.convention = engine, surrogate, convention
        self.detach_reset = detach_reset
        self._alpha_host = None if learn_alpha else alpha  # fixed alpha as a float: no device sync per call
        self._prepared: dict = {}  # per (steps, block, device, dtype): kernel tensors for the fixed parameters

        # alpha in (0, 1) through a sigmoid when learnable (it starts at most 1 - 1e-4)
        if learn_alpha:
            a0 = min(max(alpha, 1e-4), 1 - 1e-4)
            self.alpha_raw = nn.Parameter(torch.tensor(math.log(a0 / (1 - a0))))
        else:
            self.register_buffer("alpha_value", torch.tensor(alpha, dtype=torch.float64))
        self.tau_raw = nn.Parameter(torch.tensor(inverse_softplus(tau))) if learn_tau else None
        self.tau_value = tau
        self.theta_raw = nn.Parameter(torch.tensor(inverse_softplus(threshold))) if learn_threshold else None
        self.threshold_value = threshold
        self._checks_assignments = True  # from here on, setting alpha, tau or the threshold is checked

    @classmethod
    def check_tau(
        cls, alpha: float, tau: float, dt: float, method: str, memory: int | None, convention: str = "fsnn"
    ) -> None:
        """A leaky neuron's ``tau`` above the bound of :func:`fsnn.neurons.memory.stable_tau`: below it the membrane
        oscillates with a growing amplitude until potentials and gradients are inf and NaN. (A learning ``alpha``
        or ``tau`` is checked where it starts.)"""
        if tau <= (bound := cls.tau_bound(alpha, dt, method, memory, convention)):
            raise OptionError(
                "tau",
                f"a number > {bound:.6g} (at or below it the discrete f-LIF with "
                f"alpha={alpha:g}, dt={dt:g}, method={method} grows without bound, to inf and NaN; "
                "the bound scales as dt^alpha)",
                tau,
            )

    @classmethod
    def tau_bound(cls, alpha: float, dt: float, method: str, memory: int | None, convention: str = "fsnn") -> float:
        """The ``tau`` that a leaky neuron's must exceed (:func:`fsnn.neurons.memory.stable_tau`); 0 without a leak."""
        if not cls.leak:
            return 0.0
        if memory is not None and convention == "spikede":
            memory -= 1  # the toolbox's window holds lags 0 .. memory - 1 (_spikede), fsnn's 0 .. memory
        return stable_tau(method, alpha, dt, memory)

    @classmethod
    def check_combinations(cls, options: dict) -> None:
        """The combinations of options no neuron takes (an :class:`fsnn.checks.OptionError` naming one), refused
        alike by the constructor and by a config's schema (:meth:`check_options`): an engine that cannot run the
        method, the memory or the convention, and ``tau`` at or below its stability bound."""
        engine, method = options["engine"], options["method"]
        if engine == "soe" and options["memory"] is not None:
            raise OptionError("engine", "auto or direct with a memory (engine='soe' is full memory)", engine)
        if engine == "soe" and method not in SOE_METHODS:
            raise OptionError("engine", f"auto or direct with method={method!r} (soe runs {list(SOE_METHODS)})", engine)
        if engine in ("triton", "cpp") and options["convention"] != "fsnn":
            raise OptionError(
                "engine",
                f"auto with convention='spikede' (engine={engine!r} runs the fsnn convention; "
                "convention='spikede' has its own loop)",
                engine,
            )
        cls.check_tau(*(options[k] for k in ("alpha", "tau", "dt", "method", "memory", "convention")))

    @classmethod
    def check_options(cls, options: dict) -> None:
        """The checks of a config (:meth:`fsnn.registry.Registry.schema`) beyond each option's type: those of the
        constructor (:meth:`check_combinations`), and ``engine='triton'`` or ``'cpp'`` only where its kernels can
        run."""
        cls.check_combinations(options)
        reason = {"triton": kernels.unavailable_here, "cpp": cpu_kernels.unavailable_reason}.get(options["engine"])
        if reason is not None and (reason := reason()) is not None:
            raise OptionError("engine", f"auto, direct or soe ({reason})", options["engine"])

    # -- parameters --------------------------------------------------------------------------
    @property
    def alpha(self) -> torch.Tensor:
        """The order, a float64 tensor: ``sigmoid(alpha_raw)`` when learned, held in :data:`LEARNED_ALPHA`.
        Assigning a number (``neuron.alpha = 0.3``) checks it as the constructor does (and, for a fixed tau, the
        stability bound at it) and sets the fixed order or the learned one's raw value."""
        if hasattr(self, "alpha_raw"):  # float64's sigmoid reaches 0 (NaN kernels) and 1: held in LEARNED_ALPHA
            return Confine.apply(torch.sigmoid(self.alpha_raw.to(torch.float64)), *LEARNED_ALPHA)
        return self.alpha_value

    @alpha.setter
    def alpha(self, value) -> None:
        alpha = _checked(Alpha, "alpha", value)
        if hasattr(self, "alpha_raw"):
            start = min(max(alpha, LEARNED_ALPHA[0]), LEARNED_ALPHA[1])
            with torch.no_grad():
                self.alpha_raw.fill_(math.log(start / (1 - start)))
        else:
            if self.tau_raw is None:
                self.check_tau(alpha, self.tau_value, self.dt, self.method, self.memory, self.convention)
            self._buffers["alpha_value"] = torch.tensor(alpha, dtype=torch.float64, device=self.alpha_value.device)
            self._alpha_host = alpha
        self._prepared.clear()

    @property
    def tau(self) -> torch.Tensor:
        """``softplus(tau_raw)`` when learned; held (:class:`Confine`) just above the stability bound of the current
        ``alpha`` whenever tau or alpha learns: an optimiser step can cross the bound, which the constructor checks
        only at the start. Above it, values and gradients are exactly the unconstrained ones. Assigning a number
        checks it against the bound at the current ``alpha``, as the constructor does."""
        tau = F.softplus(self.tau_raw) if self.tau_raw is not None else torch.tensor(self.tau_value)
        if self.leak and (self.tau_raw is not None or self._alpha_host is None):
            alpha = self._alpha_host if self._alpha_host is not None else float(self.alpha.detach())
            bound = self.tau_bound(alpha, self.dt, self.method, self.memory, self.convention)
            tau = Confine.apply(tau, bound * (1 + TAU_MARGIN), None)
        return tau

    @tau.setter
    def tau(self, value) -> None:
        tau = _checked(Positive, "tau", value)
        alpha = self._alpha_host if self._alpha_host is not None else float(self.alpha.detach())
        self.check_tau(alpha, tau, self.dt, self.method, self.memory, self.convention)
        if self.tau_raw is not None:
            with torch.no_grad():
                self.tau_raw.fill_(inverse_softplus(tau))
        else:
            self.__dict__["tau_value"] = tau
        self._prepared.clear()

    def time_constant(self) -> torch.Tensor:
        return self.tau

    def time_constant_parameters(self) -> list[nn.Parameter]:
        return [] if self.tau_raw is None else [self.tau_raw]

    @property
    def threshold(self) -> torch.Tensor:
        """``softplus(theta_raw)`` when learned, held (:class:`Confine`) at or above :data:`LEARNED_THRESHOLD` times
        its starting value; the fixed value otherwise. Assigning a number checks it (``> 0``)."""
        if self.theta_raw is None:
            return torch.tensor(self.threshold_value)
        return Confine.apply(F.softplus(self.theta_raw), self._threshold_floor, None)

    @property
    def _threshold_floor(self) -> float:
        return LEARNED_THRESHOLD * self.threshold_value  # a learned threshold's threshold_value is where it started

    @threshold.setter
    def threshold(self, value) -> None:
        threshold = _checked(Positive, "threshold", value)
        if self.theta_raw is not None:
            with torch.no_grad():
                self.theta_raw.fill_(inverse_softplus(max(threshold, self._threshold_floor)))
        else:
            self.__dict__["threshold_value"] = threshold
        self._prepared.clear()

    #: what an assignment of each name sets, through the checks of the property
    _CHECKED_NAMES = {
        "alpha": "alpha",
        "alpha_value": "alpha",
        "tau": "tau",
        "tau_value": "tau",
        "threshold": "threshold",
        "threshold_value": "threshold",
    }

    def __setattr__(self, name, value) -> None:
        # alpha_value (a buffer), tau_value and threshold_value are the stored fixed values: after the constructor
        # every assignment of them goes through the same checks as the constructor's arguments
        if name in self._CHECKED_NAMES and self.__dict__.get("_checks_assignments"):
            getattr(FractionalNeuron, self._CHECKED_NAMES[name]).fset(self, value)
            return
        super().__setattr__(name, value)

    @property
    def _fixed(self) -> bool:
        """Whether nothing learns (alpha, tau and the threshold are numbers)."""
        return self._alpha_host is not None and self.tau_raw is None and self.theta_raw is None

    def _raw_parameters(self) -> list[tuple[str, nn.Parameter]]:
        """``(name, parameter)`` of every learned raw parameter (``alpha_raw``, ``tau_raw``, ``theta_raw``)."""
        return [(name, raw) for name in RAW_DOMAINS if (raw := getattr(self, name, None)) is not None]

    def _read_learned(self, alpha: torch.Tensor) -> float:
        """``float(alpha)``, read from its device together with every learned raw parameter, each refused in one
        ``ValueError`` when it is NaN or inf (after an optimiser step or a loaded state): the engines would turn it
        into a NaN membrane and no spikes, without a word."""
        raws = self._raw_parameters()
        values = torch.stack(
            [
                alpha.detach().to(torch.float64).reshape(()),
                *(raw.detach().to(alpha.device, torch.float64).reshape(()) for _, raw in raws),
            ]
        ).tolist()
        for (name, _), value in zip(raws, values[1:]):
            if not math.isfinite(value):
                raise OptionError(name, RAW_DOMAINS[name], value)
        return values[0]

    def extra_repr(self) -> str:
        kind = "learnable " if hasattr(self, "alpha_raw") else ""
        return (
            f"{kind}alpha={float(self.alpha.detach()):.4g}, tau={float(self.tau.detach()):.4g}, "
            f"threshold={float(self.threshold.detach()):.4g}, reset={self.reset_mode}, method={self.method}, "
            f"memory={self.memory}, engine={self.engine}, convention={self.convention}"
        )

    def _apply(self, fn, *args, **kwargs):
        """``.to()``, ``.cuda()``, ``.half()``, ...: the order and the raw parameters never lose precision (the fixed
        alpha stays float64, a raw parameter its dtype under a cast to a coarser one, such as ``.half()`` rounding
        alpha 0.3 to 0.30005); they follow a move to another device."""
        self._prepared.clear()  # .to() / .double() / .cuda(): the cached tensors would be stale
        precise = {
            id(t)
            for t in (
                self._buffers.get("alpha_value"),
                *(raw for _, raw in self._raw_parameters()),
                *(raw.grad for _, raw in self._raw_parameters()),
            )
            if t is not None
        }

        def keep_precision(tensor):
            out = fn(tensor)
            if (
                id(tensor) in precise
                and out.dtype != tensor.dtype
                and out.is_floating_point()
                and torch.finfo(out.dtype).eps > torch.finfo(tensor.dtype).eps
            ):
                return tensor.to(device=out.device)
            return out

        return super()._apply(keep_precision, *args, **kwargs)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """Every value is checked before any is copied: a fixed alpha in (0, 1] (and a fixed tau above the stability
        bound at it), learned raw parameters finite; a refused one is one ``ValueError`` naming the parameter, its
        domain and its state-dict key. A fixed alpha stored at a coarser precision that is this neuron's own alpha
        rounded (a ``.half()`` copy's) leaves the full-precision value in place."""
        alpha = None
        key = prefix + "alpha_value"
        if (
            self._alpha_host is not None
            and isinstance(stored := state_dict.get(key), torch.Tensor)
            and stored.numel() == 1
        ):
            alpha = float(stored.item())
            own = torch.tensor(self._alpha_host, dtype=torch.float64)
            if stored.is_floating_point() and stored.dtype != torch.float64 and own.to(stored.dtype).item() == alpha:
                alpha = self._alpha_host
            if not 0 < alpha <= 1:
                raise ValueError(f"alpha must be a number in (0, 1], got {alpha!r} (state dict key {key!r})")
            if self.tau_raw is None:
                try:
                    self.check_tau(alpha, self.tau_value, self.dt, self.method, self.memory, self.convention)
                except OptionError as error:
                    raise ValueError(f"{error} (at alpha={alpha:g}, state dict key {key!r})") from None
        for name, _ in self._raw_parameters():
            stored = state_dict.get(prefix + name)
            if isinstance(stored, torch.Tensor) and stored.numel() == 1 and not math.isfinite(stored.item()):
                raise ValueError(
                    f"{name} must be {RAW_DOMAINS[name]}, got {stored.item()!r} (state dict key {prefix + name!r})"
                )
        guarded = self.__dict__.get("_checks_assignments", False)
        self._checks_assignments = False  # load_state_dict(assign=True) sets the buffer itself, checked above
        try:
            super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        finally:
            self._checks_assignments = guarded
        if alpha is not None:
            self._buffers["alpha_value"] = torch.tensor(alpha, dtype=torch.float64, device=self.alpha_value.device)
            self._alpha_host = alpha
        self._prepared.clear()

    # -- forward -----------------------------------------------------------------------------
    def __prepare_scriptable__(self):  # torch.jit.script calls it first, on every submodule of what it compiles
        raise TypeError(
            f"torch.jit.script cannot compile {type(self).__name__} (its engines are Python loops and "
            "a custom autograd Function); call the module eagerly"
        )

    def _check_runnable(self, x) -> None:
        """Refuse what the engines cannot run: a ``torch.func`` transform and the meta device (one error each)."""
        if not isinstance(x, torch.Tensor):
            return  # the input checks name what x must be
        # the engines read tau and the kernel as numbers (torch.compile has no functorch wrappers to look for)
        if not torch.compiler.is_compiling() and torch._C._functorch.is_functorch_wrapped_tensor(x):
            raise TypeError(
                f"{type(self).__name__} does not run under torch.func transforms (vmap, grad, jacrev, "
                "...); use loss.backward(), and fold a mapped dimension into the batch: x of shape "
                "[T, B * V, ...]"
            )
        if x.device.type == "meta":  # the engines read tau, the threshold and the kernel as numbers
            raise ValueError(
                "x must hold values (a cpu or cuda tensor): the meta device is not supported by "
                f"{type(self).__name__}, got device 'meta'"
            )

    def _sequence(self, x: torch.Tensor, return_state: bool):
        out = self._integrate(x, return_state)
        return out if return_state else (out, None)


class FractionalLIF(FractionalNeuron):
    r"""f-LIF, the fractional leaky integrate-and-fire neuron: $\tau\, D^{\alpha} U = -(U - v_{\text{rest}}) + I$
    with the Caputo derivative $D^{\alpha}$ (discrete form in :mod:`fsnn.neurons.dynamics`).

    A multi-step module: ``neuron(x)`` takes input currents ``[T, B, ...]`` and returns spikes of the same shape.
    It also runs step by step or chunk by chunk from a state, ``spikes, state = neuron(x, state)``
    (:mod:`fsnn.neurons.base`). The arguments below are keywords; all have defaults, so ``FractionalLIF()`` is the
    paper's f-LIF at ``alpha = 0.5``.
    """

    leak = True


class FractionalIF(FractionalNeuron):
    r"""f-IF, the fractional integrate-and-fire neuron (no leak): $\tau\, D^{\alpha} U = I$; ``tau`` defaults to 1 so
    that ``alpha = 1`` is SpikingJelly's ``IFNode``."""

    leak = False

    def __init__(self, alpha: Alpha = 0.5, tau: Positive = 1.0, **kwargs):
        """An f-IF neuron; only ``tau``'s default differs from :class:`FractionalLIF`.

        Args:
            alpha: the order of the Caputo derivative, a number in $(0, 1]$; default ``0.5`` (``1``: SpikingJelly's
                ``IFNode``).
            tau: the time constant the input is divided by, a number $> 0$; default ``1.0`` (an IF neuron has no
                leak, hence no stability bound).
            **kwargs: any other argument of :class:`FractionalLIF` (``threshold``, ``reset``, ``method``,
                ``engine``, ...), with the same meaning, range and default.
        """
        super().__init__(alpha=alpha, tau=tau, **kwargs)


def collect_alphas(model: nn.Module) -> dict[str, float]:
    """``{module name: alpha}`` of every fractional neuron in ``model`` (for logging).

    Args:
        model: any module; its :class:`FractionalNeuron` submodules (``model`` itself included) are read.
    """
    return {name: float(m.alpha.detach()) for name, m in model.named_modules() if isinstance(m, FractionalNeuron)}
