"""The registry's record of a dataset (:class:`DatasetInfo`), the kinds of data (:data:`DATA_KINDS`) and what a
dataset's builder is given (:class:`BuilderArgs`).

Nothing here imports tonic, SpikingJelly, torchvision or PyG; those load lazily inside the dataset modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

#: the kinds of data: what a dataset is (:attr:`DatasetInfo.kind`), what a backbone and a task take
DATA_KINDS = ("event", "static", "graph", "sequence")


@dataclass(frozen=True)
class DatasetInfo:
    """What a model needs to know about a dataset before loading it.

    ``kind``: ``"event"`` (integrated event frames, 2 polarity channels), ``"static"`` (images repeated over T),
    ``"sequence"`` (generated ``[T, C]`` sequences, :mod:`fsnn.data.sequences`; ``in_channels``: ``C``) or
    ``"graph"`` (one graph whose nodes are classified or whose links are predicted); ``in_channels``: channels of a
    frame, or features of a node; ``size``: ``(H, W)`` of the frames fed to the model by default (``None`` for
    graphs); ``default_T``: time steps used in the paper; ``library``: what reads it; ``directory``: its folder under
    ``data_dir`` (``""``: nothing on disk); ``num_nodes``: a graph's published node count. ``builder`` loads it,
    through :func:`fsnn.data.build_dataset` for frames, :func:`fsnn.data.load_graph` for graphs and
    :func:`fsnn.data.build_sequences` for sequences; its arguments are in :func:`fsnn.data.register_dataset`.
    """

    name: str
    kind: str
    num_classes: int
    in_channels: int
    size: tuple[int, int] | None
    default_T: int
    library: str = ""
    directory: str = ""
    builder: Callable | None = field(default=None, repr=False, compare=False)
    num_nodes: int | None = None  # a graph's published number of nodes (cost estimates; checked when verifying)


def resolve_size(size, default: tuple[int, int]) -> tuple[int, int]:
    """``(H, W)`` from an int (square), a pair, or ``None`` (the dataset's default)."""
    if size is None:
        return tuple(default)
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        out = (int(size), int(size))
    else:
        try:
            out = tuple(int(s) for s in size)
        except TypeError:
            raise ValueError(f"size must be an int, an (H, W) pair or None, got {size!r}") from None
    if len(out) != 2 or min(out) < 1:
        raise ValueError(f"size must be positive (H, W), got {size!r}")
    return out
