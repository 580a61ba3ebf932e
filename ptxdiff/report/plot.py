"""`ptxdiff log --plot`: metrics along history as a PNG (matplotlib is optional)."""

from __future__ import annotations

from ptxdiff.compare.history import Event
from ptxdiff.errors import UsageError

METRICS = ("ptx_instrs", "ptx_regs", "regs", "sass_instrs")


def require_matplotlib() -> None:
    import importlib.util
    if importlib.util.find_spec("matplotlib") is None:
        import shlex
        import sys
        raise UsageError(f"--plot needs matplotlib (install.sh leaves it out): "
                         f"{shlex.quote(sys.executable)} -m pip install 'matplotlib>=3.7'")


def plot_history(events: list[Event], path: str) -> None:
    require_matplotlib()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    series: dict[str, list] = {}
    labels = []
    launched = []   # commits whose launch changed (a call site, the recording, the config): marked
    for e in events:
        rows = [r for r in e.rows if r.new is not None]
        if not rows:
            continue
        labels.append(e.commit.short[:7])
        if any(r.launch for r in rows):
            launched.append(labels[-1])
        for m in METRICS:
            series.setdefault(m, []).append(getattr(rows[0].new, m))
    fig, axes = plt.subplots(len(METRICS), 1, figsize=(max(6, len(labels) * 0.6), 2.2 * len(METRICS)), sharex=True)
    for ax, m in zip(axes, METRICS):
        ax.plot(labels, series.get(m, []), marker="o")
        for label in launched:
            ax.axvline(label, linestyle=":", color="tab:red")
        ax.set_ylabel(m)
    axes[-1].tick_params(axis="x", rotation=60)
    fig.suptitle((events[-1].kernel if events else "") + ("  (dotted: launch changed)" if launched else ""))
    fig.tight_layout()
    fig.savefig(path)
