r"""Inference energy of a spiking network, following the paper's "Energy Consumption Analysis" appendix.

:func:`count_operations` runs ONE real forward pass of a backbone on ``x = [T, B, ...]`` with forward hooks on every
``nn.Conv1d/2d/3d`` and ``nn.Linear`` (also those wrapped by the time-folding layers of :mod:`fsnn.models.layers`),
on spike self-attention (a module declaring ``spike_attention = True``, Spikformer's ``SSA``: its two spike matrix
products) and on every neuron (:func:`fsnn.neurons.registry.is_neuron`). All numbers are per sample (the batch mean), summed
over the ``T`` time steps. The graph models list their synapses instead (:class:`SynapticLayer`), priced by
:func:`synaptic_energy`.

Synaptic energy (the appendix, after Yao et al. 2023/2024):

    E_Spikformer = E_MAC x FLOPs^1_Conv + E_AC x (sum_n SOP^n_Conv + sum_m SOP^m_FC + sum_l SOP^l_SSA),
    SOPs(l) = rho x T x FLOPs(l),

where ``FLOPs(l)`` is the layer's multiply-accumulate count per time step for its input shape and ``rho`` the firing
rate of the layer's INPUT (fraction of nonzero entries). A layer counts as ``E_MAC`` x ``T x FLOPs`` (rate reported as
1) when it is the first synaptic layer (the encoding layer, ``first_layer_mac=True``) or when its input is not
spike-valued (not all entries non-negative integers, e.g. Spikformer's head after the token mean); every other layer
counts as ``E_AC x rho x T x FLOPs``. ``E_MAC = 4.6 pJ`` and ``E_AC = 0.9 pJ`` (32-bit float, 45 nm).

Neuron-intrinsic energy per neuron over ``T`` steps (the appendix; ``kappa := E_MAC / E_AC``, ``rho`` the neuron's own
output firing rate; the paper's formulas are for hard reset and are used for soft reset too):

    LIF:   E = T [ (2 + 2 rho) kappa + (2 + rho) ] E_AC
           (update input mult kappa, leak mult kappa, update sum 1, comparison 1, spike/reset rho (2 kappa + 1))
    f-LIF: E = T [ (kappa + 1) log2 T + 1 + rho (2 kappa + 1) ] E_AC
           (merged update + leak over the history T log2 T (kappa + 1), comparison 1, spike/reset rho (2 kappa + 1))

For f-LIF the ``T`` inside ``log2 T`` is the length of the memory (history) the neuron convolves with: the neuron's
``memory`` when it is set (a short-memory neuron), else the full history ``T``, i.e. ``H = min(T, memory)`` and
``E = T [ (kappa + 1) log2 H + 1 + rho (2 kappa + 1) ] E_AC``. Neurons with ``alpha = 1`` (fsnn's ``lif``,
SpikingJelly ``LIFNode``, snnTorch ``Leaky``) use the LIF formula; the f-IF neuron uses the f-LIF formula (its update
is the same merged history sum); an integer-order IF (a neuron with ``leak = False``: fsnn's ``if``, SpikingJelly
``IFNode``) uses the LIF formula without the leak multiplication,
``T [ (1 + 2 rho) kappa + (2 + rho) ] E_AC`` (an extension: the paper gives no IF formula). A layer of ``N`` neurons
(per sample and step) costs ``N x E_neuron``; ``E_total = E_synaptic + E_neuron x N_neurons``.

Note: the appendix also writes ``E_MAC = (kappa + 1) E_AC``, which contradicts ``kappa := E_MAC / E_AC``; the
definition is used by default (``kappa = 4.6 / 0.9``); pass ``kappa=E_MAC / E_AC - 1`` for the other reading.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from fsnn.neurons.fractional import FractionalNeuron
from fsnn.neurons.registry import is_neuron

__all__ = [
    "E_AC_PJ",
    "E_MAC_PJ",
    "EnergyReport",
    "LayerEnergy",
    "SynapticLayer",
    "count_operations",
    "energy_report",
    "format_table",
    "neuron_energy_pj",
    "neuron_kind",
    "synaptic_energy",
]

E_AC_PJ = 0.9  # 32-bit float accumulate, 45 nm (Horowitz 2014; the paper's energy appendix)
E_MAC_PJ = 4.6  # 32-bit float multiply-accumulate
SYNAPTIC = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear)
PJ_PER_MJ = 1e9


@dataclass
class LayerEnergy:
    """One row of the layer-wise table (per sample, summed over T).

    ``kind``: the module class (``Conv2d``, ``Linear``, ``SSA``, ``LIF``, ``f-LIF``, ``IF``); ``energy_type``: ``MAC``,
    ``AC`` or ``Neuron``; ``ops``: ``T x FLOPs`` (multiply-accumulates of the dense counterpart over T) for synaptic
    layers, the number of neurons (per sample and step) for neurons; ``rate``: the input firing rate of a synaptic
    layer (1 for MAC layers), the output firing rate of a neuron; ``energy_mj``: millijoules."""

    name: str
    kind: str
    energy_type: str
    ops: float
    rate: float
    energy_mj: float
    T: int
    spike_input: bool | None = None
    memory: int | None = None


@dataclass
class EnergyReport:
    """A model's energy estimate: one :class:`LayerEnergy` per layer, the synaptic and neuron totals (mJ per sample)
    and their shares of ``total_mj``, with the settings (E_MAC, E_AC, T) they were computed with."""

    layers: list[LayerEnergy]
    synaptic_mj: float
    neuron_mj: float
    total_mj: float
    synaptic_share: float
    neuron_share: float
    settings: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["layers"] = [asdict(row) for row in self.layers]
        return out


def neuron_kind(module: nn.Module) -> str:
    """``'f-LIF'`` (any fractional neuron with alpha < 1), ``'LIF'`` or ``'IF'`` (integer order, by the neuron's
    ``leak``: :class:`fsnn.neurons.fractional.SpikingNeuron`)."""
    if isinstance(module, FractionalNeuron) and float(module.alpha.detach()) < 1.0:
        return "f-LIF"
    return "LIF" if getattr(module, "leak", True) else "IF"


def neuron_energy_pj(
    kind: str, T: int, rate: float, memory: int | None = None, e_ac: float = E_AC_PJ, kappa: float | None = None
) -> float:
    """Energy in pJ of ONE neuron over ``T`` steps at output firing rate ``rate`` (formulas in the module docstring)."""
    k = E_MAC_PJ / E_AC_PJ if kappa is None else float(kappa)
    rho, T = float(rate), int(T)
    if kind == "LIF":
        units = T * ((2 + 2 * rho) * k + (2 + rho))
    elif kind == "IF":
        units = T * ((1 + 2 * rho) * k + (2 + rho))
    elif kind == "f-LIF":
        history = T if memory is None else min(T, int(memory))
        units = T * ((k + 1) * math.log2(max(history, 1)) + 1 + rho * (2 * k + 1))
    else:
        raise ValueError(f"neuron kind must be 'LIF', 'IF' or 'f-LIF', got {kind!r}")
    return units * e_ac


def _macs(module: nn.Module, out: torch.Tensor) -> int:
    """Multiply-accumulates of one call: each output element sums fan-in products."""
    if isinstance(module, nn.Linear):
        return out.numel() * module.in_features
    fan_in = (module.in_channels // module.groups) * math.prod(module.kernel_size)
    return out.numel() * fan_in


def _is_spikes(x: torch.Tensor) -> bool:
    """Spike-valued: every entry a non-negative integer (binary spikes, or spike sums such as SEW additions)."""
    x = x.detach()
    return bool(((x >= 0) & (x == torch.round(x))).all())


def _synaptic_kind(module: nn.Module) -> str:
    """The torch layer a synaptic module is (``SeqConv2d`` -> ``Conv2d``), for the table."""
    return next(cls.__name__ for cls in SYNAPTIC if isinstance(module, cls))


def count_operations(
    model: nn.Module,
    x: torch.Tensor,
    *,
    first_layer_mac: bool = True,
    e_ac: float = E_AC_PJ,
    e_mac: float = E_MAC_PJ,
    kappa: float | None = None,
) -> list[LayerEnergy]:
    """Per-layer energy rows of ONE forward pass ``model(x)``, ``x = [T, B, ...]``, in execution order.

    Synaptic rows (Conv/Linear, SSA): ``T x FLOPs`` per sample and the input firing rate; the first synaptic layer
    (``first_layer_mac``) and any layer with a real-valued input cost ``E_MAC x T x FLOPs``, the others
    ``E_AC x rate x T x FLOPs``. Neuron rows: ``N x E_neuron(kind, T, rate, memory)`` (:func:`neuron_energy_pj`).
    The model runs in eval mode under ``torch.no_grad`` (its mode is restored)."""
    if x.dim() < 3:
        raise ValueError(f"x must be a sequence [T, B, ...], got shape {tuple(x.shape)}")
    T, B = int(x.shape[0]), int(x.shape[1])
    rows: list[LayerEnergy] = []
    last_rate: dict[int, float] = {}
    handles = []

    def synaptic_hook(name):
        def hook(module, inputs, out):
            inp = inputs[0]
            macs = _macs(module, out) / B
            spikes = _is_spikes(inp)
            dense = not spikes or (first_layer_mac and not any(r.energy_type != "Neuron" for r in rows))
            rate = 1.0 if dense else float((inp.detach() != 0).float().mean())
            pj = macs * e_mac if dense else macs * rate * e_ac
            rows.append(
                LayerEnergy(
                    name, _synaptic_kind(module), "MAC" if dense else "AC", macs, rate, pj / PJ_PER_MJ, T, spikes
                )
            )

        return hook

    def ssa_hook(name):
        def hook(module, inputs, out):
            Tm, Bm, D, N = inputs[0].shape
            d = D // module.num_heads
            # two products q k^T v in the order the module takes: 2 N^2 d or 2 N d^2 per head and step
            macs = Tm * module.num_heads * 2 * min(N * N * d, N * d * d)
            rate = last_rate.get(id(module.v_neuron), 1.0)
            rows.append(LayerEnergy(name, "SSA", "AC", float(macs), rate, macs * rate * e_ac / PJ_PER_MJ, Tm, True))

        return hook

    def neuron_hook(name):
        def hook(module, inputs, out):
            spikes = (out[0] if isinstance(out, tuple) else out).detach()
            Tn = int(spikes.shape[0])
            count = spikes.numel() / (Tn * B)
            rate = float((spikes != 0).float().mean())
            last_rate[id(module)] = rate
            kind = neuron_kind(module)
            memory = getattr(module, "memory", None) if kind == "f-LIF" else None
            pj = count * neuron_energy_pj(kind, Tn, rate, memory, e_ac, kappa)
            rows.append(
                LayerEnergy(
                    name,
                    kind,
                    "Neuron",
                    count,
                    rate,
                    pj / PJ_PER_MJ,
                    Tn,
                    None,
                    memory if memory is None else int(memory),
                )
            )

        return hook

    for name, module in model.named_modules():
        if is_neuron(module):
            handles.append(module.register_forward_hook(neuron_hook(name)))
        elif isinstance(module, SYNAPTIC):
            handles.append(module.register_forward_hook(synaptic_hook(name)))
        elif getattr(module, "spike_attention", False):
            handles.append(module.register_forward_hook(ssa_hook(name)))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    # the SSA hook fires after the neurons inside it: put its row right after v_neuron's, as in the paper's table
    return _order_ssa(rows)


def _order_ssa(rows: list[LayerEnergy]) -> list[LayerEnergy]:
    out: list[LayerEnergy] = []
    for row in rows:
        if row.kind == "SSA":
            anchor = next((i for i in range(len(out) - 1, -1, -1) if out[i].name == f"{row.name}.v_neuron"), None)
            if anchor is not None:
                out.insert(anchor + 1, row)
                continue
        out.append(row)
    return out


def energy_report(model: nn.Module, x: torch.Tensor, **kwargs) -> EnergyReport:
    """:func:`count_operations` plus totals: synaptic and neuron energy (mJ per sample) and their shares."""
    rows = count_operations(model, x, **kwargs)
    syn = sum(r.energy_mj for r in rows if r.energy_type != "Neuron")
    neu = sum(r.energy_mj for r in rows if r.energy_type == "Neuron")
    total = syn + neu
    settings = {
        "T": int(x.shape[0]),
        "batch": int(x.shape[1]),
        "e_ac_pj": kwargs.get("e_ac", E_AC_PJ),
        "e_mac_pj": kwargs.get("e_mac", E_MAC_PJ),
        "kappa": E_MAC_PJ / E_AC_PJ if kwargs.get("kappa") is None else kwargs["kappa"],
        "first_layer_mac": kwargs.get("first_layer_mac", True),
    }
    return EnergyReport(rows, syn, neu, total, syn / total if total else 0.0, neu / total if total else 0.0, settings)


def format_table(report: EnergyReport) -> str:
    """The paper's layer-wise table (Layer Name, Type, T x FLOPs (M), Average Firing Rate, Energy Type, Energy (mJ))
    followed by the totals and the energy composition."""
    head = f"{'Layer Name':<40} {'Type':<8} {'TxFLOPs (M)':>12} {'Rate':>7} {'Energy Type':<14} {'Energy (mJ)':>12}"
    lines = [head, "-" * len(head)]
    for r in report.layers:
        flops = 0.0 if r.energy_type == "Neuron" else r.ops / 1e6
        etype = {"MAC": "E_MAC", "AC": f"E_AC x {r.rate:.3f}", "Neuron": "Neuron"}[r.energy_type]
        lines.append(f"{r.name:<40} {r.kind:<8} {flops:>12.4f} {r.rate:>7.3f} {etype:<14} {r.energy_mj:>12.6f}")
    lines += [
        "-" * len(head),
        f"E_synaptic total = {report.synaptic_mj * 1e6:,.2f} nJ",
        f"E_neuron total   = {report.neuron_mj * 1e6:,.2f} nJ",
        f"E_overall        = {report.total_mj * 1e6:,.2f} nJ = {report.total_mj:.6f} mJ",
        f"Synaptic energy share: {100 * report.synaptic_share:.1f}%",
        f"Neuron energy share: {100 * report.neuron_share:.1f}%",
    ]
    return "\n".join(lines)


@dataclass(frozen=True)
class SynapticLayer:
    """One synaptic layer for the energy estimate.

    ``ops``: synaptic operations per sample (node) per step for a dense input (fan-in x fan-out for a linear layer);
    ``source``: firing-rate key (module name) of the spikes that drive it, or None for a non-spike (dense) input;
    ``kind``: ``"AC"`` (accumulate, 0.9 pJ) or ``"MAC"`` (multiply-accumulate, 4.6 pJ); ``steps``: how many times it
    runs per sample (None = the model's T); ``target``: the neuron that the layer feeds (for the authors' convention,
    which scales a layer by its output neuron's rate).
    """

    name: str
    ops: float
    source: str | None
    kind: str = "AC"
    steps: int | None = None
    target: str | None = None


def synaptic_energy(
    model: nn.Module,
    firing_rates: dict[str, float],
    T: int | None = None,
    convention: str = "input",
    e_ac: float = E_AC_PJ,
    e_mac: float = E_MAC_PJ,
) -> dict[str, float]:
    """Synaptic energy per sample (node) in mJ: ``{layer name: mJ, ..., "total": mJ}``.

    For each :class:`SynapticLayer` of ``model.synaptic_layers()``: an accumulate layer driven by
    spikes costs ``E_AC (0.9 pJ) x ops x T x rate`` (``ops`` = fan-in x fan-out for a linear layer), i.e. one
    accumulate per input spike and fan-out connection; a layer with a non-spike (dense) input counts ``ops`` per step
    at rate 1, as ``E_MAC (4.6 pJ)`` when it is a multiply-accumulate layer (e.g. a first layer on real-valued
    features). ``T`` defaults to ``model.T``; a layer may run fewer steps (MSG's encoder runs once). Neuron-intrinsic
    costs (membrane updates) are not included.

    ``convention="input"`` (default; the paper's appendix, Yao et al.): ``rate`` is the firing rate of the spikes that
    drive the layer (``layer.source``), so SGCN's energy depends on the Poisson input only. ``convention="output"``:
    ``rate`` is the firing rate of the neuron the layer feeds (``layer.target``), what the authors' fspikeDE SGCN code
    computes (``E_AC x in*out x T x`` the output neurons' rate), and what makes their energies differ by neuron; dense
    layers stay at rate 1 in both. ``firing_rates``: ``{module name: rate}``, e.g. from
    :func:`fsnn.models.probes.firing_rates`.
    """
    if convention not in ("input", "output"):
        raise ValueError(f"convention must be 'input' or 'output', got {convention!r}")
    T = int(T if T is not None else model.T)
    energies: dict[str, float] = {}
    for layer in model.synaptic_layers():
        key = layer.source if convention == "input" else (layer.target if layer.source is not None else None)
        if key is None:
            rate = 1.0
        elif key in firing_rates:
            rate = float(firing_rates[key])
        else:
            raise KeyError(
                f"no firing rate for {key!r} ({convention} of {layer.name!r}); measured: {sorted(firing_rates)}"
            )
        if layer.kind not in ("AC", "MAC"):
            raise ValueError(f"layer {layer.name!r}: kind must be 'AC' or 'MAC', got {layer.kind!r}")
        per_op = e_ac if layer.kind == "AC" else e_mac
        steps = T if layer.steps is None else layer.steps
        energies[layer.name] = per_op * layer.ops * steps * rate / PJ_PER_MJ
    energies["total"] = sum(energies.values())
    return energies
