"""SGCN and DRSGNN: Poisson spikes of precomputed node features -> ``Linear`` -> neuron, read out as firing rates.

>>> from fsnn.models import build_backbone
>>> model = build_backbone("sgcn", in_features=F, num_classes=C, neuron="flif", neuron_kwargs={"alpha": 0.3}, T=100)
>>> rates = model(features)          # [B, F] precomputed node features -> [B, C] mean firing rates over T

* ``sgcn`` (Zhu et al. 2022, SpikingGCN): Poisson spikes of the (propagated, standardized) node features ->
  ``Linear(F, C)`` -> (dropout) -> neuron; the output is the mean firing rate of the C class neurons over the T steps,
  on which training applies one cross-entropy (a single softmax; the authors' fspikeDE code applied ``softmax`` and
  then ``CrossEntropyLoss``, a double softmax).
* ``drsgnn`` (Zhao et al. 2024): SGCN whose input carries a positional encoding in its last ``pe_dim`` columns
  (Laplacian eigenvectors, whose signs are flipped at random in training mode only, or random-walk landing
  probabilities) and whose threshold is learned (see :class:`DRSGNN` for neurons that cannot learn one).

Every spiking nonlinearity is ``build_neuron(neuron, **neuron_kwargs)``, so compared runs differ only in the neuron.
Energy: every graph model lists its synapses with ``synaptic_layers()`` (:class:`fsnn.models.energy.SynapticLayer`), which
:func:`fsnn.models.energy.synaptic_energy` turns into picojoules with measured firing rates.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from fsnn.checks import (
    Count,
    Flag,
    NonNegative,
    NonNegativeInt,
    Probability,
    check_int,
    checked,
    one_of,
)
from fsnn.models.energy import SynapticLayer
from fsnn.models.poisson import PoissonEncoder
from fsnn.models.registry import register_backbone
from fsnn.neurons.fractional import LEARNED_THRESHOLD, Confine, FractionalNeuron, inverse_softplus
from fsnn.neurons.memory import history_kernel
from fsnn.neurons.registry import build_neuron, neuron_params


# ------------------------------------------------------------------------------------------------------- SGCN
def cumulated_spike_readout(spikes: torch.Tensor, order: torch.Tensor | float, dt: float = 1.0) -> torch.Tensor:
    r"""fspikeDE's "cumulated spike" read-out of output spikes ``s_k`` (``[T, ...] -> [...]``): the state ``c`` of
    ``D^beta c(t) = s(t)``, ``c(0) = 0`` (Caputo, order ``beta``), integrated with the rest of the state by its
    adjoint solver's fractional Adams-Bashforth predictor (``fdeint_adjoint``, ``predictor-f``) and read at the end::

        c_T = dt^beta / Gamma(beta + 1) * sum_{k=0}^{T-1} [(T - k)^beta - (T - 1 - k)^beta] s_k
            = sum_k K_{T-1-k} s_k        (K: fsnn.neurons.memory.history_kernel("pred", beta, T, dt))

    A spike counts the more the later it comes (``K_0 = dt^beta / Gamma(beta + 1)``, ``K_m ~ m^(beta - 1)``); at
    ``beta = 1`` this is ``dt`` times the spike count. That solver used one order for all state components, the
    neuron's alpha (``beta = alpha``, differentiable when alpha is learned; 1 for a first-order neuron), and
    ``dt = 1`` in the SGCN scripts whose logs are the paper's f-SNN graph numbers."""
    kernel = history_kernel("pred", order, spikes.shape[0], dt)
    return torch.tensordot(kernel.flip(0).to(spikes.dtype), spikes, dims=1)


@register_backbone("sgcn", supports={"graph"})
class SpikingGCN(nn.Module):
    """SGCN: Poisson spikes ``[T, B, F]`` -> ``Linear(F, C)`` -> dropout -> neuron -> mean firing rate ``[B, C]``.

    ``bias=True`` matches the authors' logged fspikeDE runs (1433*7 + 7 parameters on Cora); the spikeDE release uses
    ``bias=False``. Dropout (fspikeDE's placement) acts on the synaptic currents, one mask per node for all steps.
    ``spike_noise_std`` (robustness probe, off by default) adds Gaussian noise to the input spikes; it can be changed
    at any time (``model.spike_noise_std = 0.1``).

    The first layer is applied to the spikes as :meth:`fsnn.models.poisson.PoissonSpikes.linear` (the certain
    inputs' current once, the sampled ones per step, in chunks of bounded size): the same currents as ``fc`` on the
    dense spikes, without building them, so memory does not grow with the evaluation batch.

    Legacy switches of fspikeDE's graph code (off by default; for the recipe ablation, not for new work):
    ``authors_frozen_encoding`` feeds one spike pattern at all ``T`` steps (its SpikingJelly baseline);
    ``authors_double_softmax`` outputs ``softmax(rates)``, on which training's cross-entropy applies a second softmax;
    ``authors_cumulated_readout`` reads the output spikes out as the fractional integral of
    :func:`cumulated_spike_readout` (its f-SNN models, whose logs are the paper's f-SNN graph numbers) instead of the
    mean firing rate.

    Args:
        in_features: supplied by the task (:func:`fsnn.models.register_backbone`): the width ``F`` of the
            preprocessed feature rows.
        num_classes: supplied by the task (:func:`fsnn.models.register_backbone`).
        neuron: supplied by the task (:func:`fsnn.models.register_backbone`); default ``"flif"``.
        neuron_kwargs: supplied by the task (:func:`fsnn.models.register_backbone`); default ``None``.
        T: the number of Poisson encoding steps, supplied by the task (:func:`fsnn.models.register_backbone`);
            default ``100`` (the paper's ``N = 100``).
        dropout: the probability of zeroing a synaptic current (one mask per node for all steps, training only), a
            number in ``[0, 1)``; default ``0.0`` (``conf/backbone/sgcn.yaml``).
        bias: whether the ``Linear(F, C)`` layer has a bias; default ``True`` (the authors' logged runs).
        spike_noise_std: the standard deviation of Gaussian noise added to the input spikes (the robustness probe,
            ``corruption=spike_noise``), a finite number >= 0; default ``0.0`` (off).
        authors_frozen_encoding: ``True`` feeds one Poisson spike pattern at all ``T`` steps (fspikeDE's SpikingJelly
            baseline); default ``False`` (a new draw at every step).
        authors_double_softmax: ``True`` outputs ``softmax(rates)``, under a second softmax in the cross-entropy;
            default ``False``.
        authors_cumulated_readout: ``True`` reads the output spikes out as :func:`cumulated_spike_readout`, fspikeDE's
            f-SNN read-out; default ``False`` (the mean firing rate).
    """

    full_graph = False

    @checked
    def __init__(
        self,
        in_features: Count,
        num_classes: Count,
        neuron: str = "flif",
        neuron_kwargs: dict | None = None,
        T: Count = 100,
        dropout: Probability = 0.0,
        bias: Flag = True,
        spike_noise_std: NonNegative = 0.0,
        authors_frozen_encoding: Flag = False,
        authors_double_softmax: Flag = False,
        authors_cumulated_readout: Flag = False,
    ):
        super().__init__()
        self.in_features, self.num_classes = in_features, num_classes
        self.encoder = PoissonEncoder(T, frozen=authors_frozen_encoding)
        self.T = self.encoder.T
        self.fc = nn.Linear(self.in_features, self.num_classes, bias=bias)
        self.dropout = dropout
        self.neuron = build_neuron(neuron, **dict(neuron_kwargs or {}))
        self.spike_noise_std = spike_noise_std
        self.authors_double_softmax = authors_double_softmax
        self.authors_cumulated_readout = authors_cumulated_readout

    def extra_repr(self) -> str:
        authors = "".join(
            f", {name}=True" for name in ("authors_double_softmax", "authors_cumulated_readout") if getattr(self, name)
        )
        return f"T={self.T}, dropout={self.dropout}, spike_noise_std={self.spike_noise_std}{authors}"

    # hooks for DRSGNN
    def prepare_input(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def scale_currents(self, currents: torch.Tensor) -> torch.Tensor:
        return currents

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"features must have shape [B, {self.in_features}], got {tuple(x.shape)}")
        spikes = self.encoder(self.prepare_input(x))
        currents = spikes.linear(self.fc.weight, self.fc.bias, noise_std=self.spike_noise_std)
        if self.training and self.dropout > 0.0:
            keep = 1.0 - self.dropout
            currents = currents * torch.empty_like(currents[0]).bernoulli_(keep).div_(keep)
        spikes = self.neuron(self.scale_currents(currents))
        if self.authors_cumulated_readout:
            order = self.neuron.alpha if isinstance(self.neuron, FractionalNeuron) else 1.0
            out = cumulated_spike_readout(spikes, order)
        else:
            out = spikes.mean(0)
        return out.softmax(-1) if self.authors_double_softmax else out

    def synaptic_layers(self) -> list[SynapticLayer]:
        return [SynapticLayer("fc", self.in_features * self.num_classes, source="encoder", target="neuron")]


# ------------------------------------------------------------------------------------------------------- DRSGNN
THRESHOLD_MODES = ("auto", "neuron", "scale", "fixed")
PE_KINDS = ("lap", "rw", "none")
PE_ALIASES = {"laplacian": "lap", "random_walk": "rw", None: "none"}  # fsnn.data.graph_features names


@register_backbone("drsgnn", supports={"graph"})
class DRSGNN(SpikingGCN):
    """DRSGNN: SGCN with a positional encoding in the last ``pe_dim`` input columns and a learnable threshold.

    ``in_features`` counts the positional-encoding columns (``F + pe_dim``). With ``pe="lap"`` each of the ``pe_dim``
    columns has its sign flipped at random (one sign per column and forward pass, shared by the nodes of the batch) in
    training mode only, the usual LapPE augmentation for the sign ambiguity of eigenvectors; ``pe="rw"`` (random-walk
    probabilities, sign-definite) is used as given. ``pe`` also accepts :func:`fsnn.data.graph_features.node_features`'
    names (``"laplacian"``, ``"random_walk"``, None).

    Learnable threshold (``threshold_mode``):

    * ``"neuron"``: the neuron's own ``learn_threshold=True`` (fsnn neurons ``flif``/``fif``/``lif``).
    * ``"scale"``: a learnable scalar threshold ``theta`` held by DRSGNN; the currents are multiplied by
      ``theta0 / theta`` before a neuron with fixed threshold ``theta0``. For a neuron whose subthreshold dynamics are
      linear in the membrane potential with rest and reset at 0 (IF, LIF, f-IF, f-LIF; soft reset, or hard reset to
      0), this is exactly a neuron with threshold ``theta`` in the forward pass (only the surrogate's width differs by
      the factor ``theta0 / theta``), so baselines whose threshold is a plain float (SpikingJelly, snnTorch) get the
      same trainable parameter, held as the neurons' own at or above ``1e-4 theta0``.
    * ``"auto"`` (default): ``"neuron"`` when the neuron takes ``learn_threshold``, else ``"scale"``.
    * ``"fixed"``: no learnable threshold.

    ``learned_threshold`` reports the current threshold in every mode.

    Args:
        in_features: as in :class:`SpikingGCN`, the positional-encoding columns included: ``F + pe_dim``.
        neuron: as in :class:`SpikingGCN`; default ``"flif"``.
        neuron_kwargs: as in :class:`SpikingGCN`; default ``None``.
        pe: the positional encoding in the last ``pe_dim`` input columns: ``"lap"`` (default: Laplacian
            eigenvectors, LSPE, signs flipped at random in training), ``"rw"`` (random-walk landing probabilities,
            RWPE) or ``"none"``; ``"laplacian"``, ``"random_walk"`` and ``None`` are the same three.
        pe_dim: the number of positional-encoding columns, an integer from 0 to ``in_features - 1``; default ``32``
            (the paper's); ignored (0) with ``pe="none"``.
        threshold_mode: who learns the threshold: ``"auto"`` (default), ``"neuron"``, ``"scale"`` or ``"fixed"``
            (see above).
        **kwargs: the other arguments of :class:`SpikingGCN` (``num_classes``, ``T``, ``dropout``, ``bias``,
            ``spike_noise_std`` and the ``authors_*`` switches), with the same meaning, range and default.
    """

    @checked
    def __init__(
        self,
        in_features: Count,
        neuron: str = "flif",
        neuron_kwargs: dict | None = None,
        pe: one_of(*PE_KINDS, "laplacian", "random_walk") | None = "lap",
        pe_dim: NonNegativeInt = 32,
        threshold_mode: one_of(*THRESHOLD_MODES) = "auto",
        **kwargs,
    ):
        pe = PE_ALIASES.get(pe, pe)
        pe_dim = check_int("pe_dim", 0 if pe == "none" else pe_dim, minimum=0, below=in_features)
        neuron_kwargs = dict(neuron_kwargs or {})
        learns = "learn_threshold" in (neuron_params(neuron) or ())
        if threshold_mode == "auto":
            threshold_mode = "neuron" if learns else "scale"
        if threshold_mode == "neuron":
            if not learns:
                raise ValueError(f"neuron {neuron!r} cannot learn its threshold; use threshold_mode='scale'")
            neuron_kwargs["learn_threshold"] = True
        elif learns and neuron_kwargs.get("learn_threshold"):
            raise ValueError(
                f"threshold_mode={threshold_mode!r} with learn_threshold=True would learn the threshold "
                "twice (or not at all); drop learn_threshold or use threshold_mode='neuron'"
            )
        super().__init__(in_features, neuron=neuron, neuron_kwargs=neuron_kwargs, **kwargs)
        self.pe, self.pe_dim, self.threshold_mode = pe, pe_dim, threshold_mode
        self.threshold0 = float(neuron_kwargs.get("threshold", self._neuron_default_threshold()))
        if threshold_mode == "scale":
            self.theta_raw = nn.Parameter(torch.tensor(inverse_softplus(self.threshold0)))
        else:
            self.theta_raw = None

    def _neuron_default_threshold(self) -> float:
        value = getattr(self.neuron, "threshold", 1.0)
        return float(value.detach()) if isinstance(value, torch.Tensor) else float(value)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, pe={self.pe}, pe_dim={self.pe_dim}, threshold_mode={self.threshold_mode}"

    def _scaled_threshold(self) -> torch.Tensor:
        """``softplus(theta_raw)``, held (projected gradient) at or above ``LEARNED_THRESHOLD`` times its start, as
        the neurons' own learned threshold: a softplus gone to 0 would scale the currents to inf."""
        return Confine.apply(F.softplus(self.theta_raw), LEARNED_THRESHOLD * self.threshold0, None)

    @property
    def learned_threshold(self) -> torch.Tensor:
        if self.theta_raw is not None:
            return self._scaled_threshold()
        value = getattr(self.neuron, "threshold", self.threshold0)
        return value if isinstance(value, torch.Tensor) else torch.tensor(float(value))

    def prepare_input(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.training and self.pe == "lap" and self.pe_dim > 0):
            return x
        signs = torch.randint(0, 2, (self.pe_dim,), device=x.device).to(x.dtype).mul_(2).sub_(1)
        return torch.cat([x[:, : -self.pe_dim], x[:, -self.pe_dim :] * signs], dim=1)

    def scale_currents(self, currents: torch.Tensor) -> torch.Tensor:
        if self.theta_raw is None:
            return currents
        return currents * (self.threshold0 / self._scaled_threshold())
