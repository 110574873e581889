"""One look for every figure: matplotlib settings, colours (fractional neurons warm, first-order cool),
markers, legends, and the writer that saves PNG and PDF with fixed metadata."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, Iterable

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

from fsnn.atomic import write_atomic
from fsnn.neurons.registry import is_fractional

MIN_FONT_PT = 9


STYLE = {
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": MIN_FONT_PT,
    "legend.title_fontsize": MIN_FONT_PT,
    "xtick.labelsize": MIN_FONT_PT,
    "ytick.labelsize": MIN_FONT_PT,
    "figure.titlesize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


# two hue families, each colour with its own marker so that the lines stay apart in grey print as well
WARM = (("#b2182b", "o"), ("#e6550d", "s"), ("#f4a300", "^"), ("#8c510a", "D"), ("#de77ae", "v"))


COOL = (
    ("#08519c", "X"),
    ("#1ab2c4", "P"),
    ("#238b45", "h"),
    ("#6a51a3", "d"),
    ("#525252", "<"),
    ("#6baed6", ">"),
    ("#74c476", "p"),
    ("#9e9ac8", "*"),
)


METADATA = {"png": {"Software": None}, "pdf": {"Creator": None, "Producer": None, "CreationDate": None}}


def styled(draw: Callable) -> Callable:
    """Run a figure function under :data:`STYLE` (fonts are fixed when a text is created, so the whole function)."""

    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            return draw(*args, **kwargs)

    return wrapper


def save(fig: Figure, out: str | Path, name: str) -> list[Path]:
    """``fig`` as ``<out>/<name>.png`` and ``.pdf``, without a date or version in the files' metadata, each written
    whole or not at all (:func:`fsnn.atomic.write_atomic`: a full disk leaves the previous file, never half of one,
    and a link in its place is replaced, not followed)."""
    out = Path(out)
    paths = []
    for ext in ("png", "pdf"):
        path = out / f"{name}.{ext}"
        write_atomic(
            path,
            lambda handle, ext=ext: fig.savefig(
                handle, format=ext, dpi=150, bbox_inches="tight", metadata=METADATA[ext]
            ),
        )
        paths.append(path)
    return paths


def colormap_colors(name: str, n: int, stop: float = 0.85) -> np.ndarray:
    """``n`` RGBA colours evenly spaced over matplotlib's colormap ``name``, from its start to ``stop`` (a fraction of
    its range)."""
    return matplotlib.colormaps[name](np.linspace(0.0, stop, n))


def family_styles(keys: Iterable[str], fractional: Callable[[str], bool] = is_fractional) -> dict[str, dict]:
    """``{key: {color, marker}}``: fractional keys take the warm colours in order of first appearance, the others the
    cool ones (a key given again keeps its style: one per run is fine)."""
    styles, counts = {}, {True: 0, False: 0}
    for key in keys:
        if key in styles:
            continue
        family = bool(fractional(key))
        palette = WARM if family else COOL
        color, marker = palette[counts[family] % len(palette)]
        styles[key] = {"color": color, "marker": marker}
        counts[family] += 1
    return styles


def add_caption(captions: dict | None, name: str, text: str) -> None:
    """``captions[name] = text``, where the caller collects captions (``captions`` is not ``None``)."""
    if captions is not None:
        captions[name] = text


def legend_below(
    fig: Figure, handles: list, labels: list[str], ncol: int = 1, title: str | None = None, axes_height: float = 4.4
) -> None:
    """A legend under the axes, never over the data: the figure grows by the legend's measured height."""
    legend = fig.legend(handles, labels, loc="lower center", ncol=ncol, frameon=False, title=title)
    height = legend.get_window_extent().height / fig.dpi + 0.1
    fig.set_size_inches(fig.get_figwidth(), axes_height + height)
    fig.tight_layout(rect=(0, height / (axes_height + height), 1, 1))


def legend_text(label: str, runs: list) -> str:
    """A legend entry with the number of runs behind it."""
    return f"{label} (n={len(runs)})"


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else 0.0)


def epochs_text(epochs: int | None) -> str:
    """A number of training epochs in words (a record may lack it)."""
    return "epochs not recorded" if epochs is None else f"{epochs} epochs"


def plain_log_axis(axis, ticks=None) -> None:
    """Log-axis ticks written as plain numbers (4, 8, 16; 2, 5, 10), not as powers."""
    if ticks is not None:
        axis.set_major_locator(FixedLocator(ticks))
    else:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())
