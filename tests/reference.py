"""Literal, slow implementations of the neuron equations, written independently of the engines.

They follow the equations term by term with Python loops and plain autograd, so the fast
engines (blocked history, SOE, analytic backward) are checked against the maths, not against
themselves.
"""

from __future__ import annotations

import math

import torch

from fsnn.neurons.surrogate import spike


def fsnn_neuron(
    x,
    kernel,
    *,
    tau,
    theta,
    leak=True,
    reset="soft",
    v_reset=0.0,
    detach_reset=False,
    surrogate="sigmoid",
    scale=5.0,
    memory=None,
):
    """fsnn convention (fsnn/neurons/dynamics.py): currents convolved with ``kernel``, reset as a current."""
    T = x.shape[0]
    u_init = v_reset if reset == "hard" else 0.0
    currents, spikes, potentials = [], [], []
    v_prev = torch.full_like(x[0], u_init)
    for k in range(T):
        f = (x[k] + (u_init - v_prev)) / tau if leak else x[k] / tau
        history = torch.zeros_like(x[0])
        for j in range(k):
            if memory is None or k - j <= memory:
                history = history + kernel[k - j] * currents[j]
        h = u_init + history + kernel[0] * f
        s = spike(h - theta, surrogate, scale)
        s_reset = s.detach() if detach_reset else s
        v = h - theta * s_reset if reset == "soft" else h - s_reset * (h - v_reset)
        currents.append(f + (v - h) / kernel[0])
        spikes.append(s)
        potentials.append(v)
        v_prev = v
    return torch.stack(spikes), torch.stack(potentials)


def spikede_neuron(x, alpha, *, tau, theta, leak=True, method="pred", h=1.0, scale=5.0, surrogate="sigmoid"):
    """The official toolbox's update, in its own state form."""
    T = x.shape[0]
    a = float(alpha)
    v = [torch.zeros_like(x[0])]
    f_hist, out = [], []
    g = [1.0]
    for m in range(1, T + 2):
        g.append(g[-1] * (1 - (1 + a) / m))
    for k in range(T):
        u = v[k] + (x[k] - v[k]) / tau if leak else v[k] + x[k] / tau
        s = spike(u - theta, surrogate, scale)
        f = ((x[k] - v[k]) / tau if leak else x[k] / tau) - theta * s.detach() / tau
        f_hist.append(f)
        if method == "pred":
            acc = torch.zeros_like(x[0])
            for j in range(k + 1):
                acc = acc + ((k + 1 - j) ** a - (k - j) ** a) * f_hist[j]
            v.append(h**a / math.gamma(a + 1) * acc)
        else:  # gl
            acc = h**a * f
            for m in range(1, k + 2):
                acc = acc - g[m] * v[k + 1 - m]
            v.append(acc)
        out.append(s)
    return torch.stack(out), torch.stack(v[1:])
