"""PNG figures for docs/benchmarks.md, drawn by bench/run_all.py (matplotlib: the `bench` extra).

Each function takes figures a benchmark returned and writes one PNG; none measures anything.
Without matplotlib the runner still writes every table and says the plot was skipped.
"""

from __future__ import annotations

from pathlib import Path


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def rss_vs_sessions(runs: list[tuple[str, dict]], target_mb: float, path: Path) -> Path:
    """The master's RSS sampled while sessions were opened, one line per run (`rss_curve` of
    bench/scale.py: (sessions open, MB) pairs), with the target as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")  # no display: a file only
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=120)
    for label, figures in runs:
        sessions, mb = zip(*figures["rss_curve"], strict=True)
        axes.plot(sessions, mb, marker=".", label=label)
        if "rss_peak_mb" in figures:  # a run that streamed
            peak = ([figures["sessions"]], [figures["rss_peak_mb"]])
            axes.plot(*peak, marker="^", color="black", ls="")
    axes.axhline(target_mb, color="grey", ls="--", lw=1, label=f"target {target_mb:,.0f} MB")
    axes.set_xlabel("sessions open (idle); ▲ = the peak while some stream")
    axes.set_ylabel("master RSS (MB)")
    axes.set_title("Master memory vs sessions (bench/scale.py)")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path
