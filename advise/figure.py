"""One figure per shape: the best candidates' modelled TFLOP/s per target with their 80 % (thick) and
95 % (thin) intervals, XLA's estimate beside them; drawn from the advice table alone."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from tpu_matmul_repro.experiments.core.chips import POST_CHIP  # noqa: E402

SHOWN = 8  # candidates per target


def draw(advice: pd.DataFrame, path, title: str) -> None:
    targets = list(dict.fromkeys(advice.target))
    fig, axes = plt.subplots(1, len(targets), figsize=(5.2 * len(targets), 4.2), squeeze=False)
    for ax, target in zip(axes[0], targets, strict=True):
        mine = advice[advice.target == target]
        best = mine[(mine.kernel != "xla") & mine["rank"].notna()].sort_values("rank").head(SHOWN)
        xla = mine[(mine.kernel == "xla") & mine.model_device_tflops.notna()]
        shown = pd.concat([best, xla])
        labels = [f"#{int(r['rank'])} ({int(r.bm)},{int(r.bk)},{int(r.bn)})" if r.kernel != "xla" else "XLA"
                  for _, r in shown.iterrows()]
        y = list(range(len(shown)))[::-1]
        for lo, hi, width in (("lo95", "hi95", 1.2), ("lo80", "hi80", 4.0)):
            ax.hlines(y, shown[f"model_device_tflops_{lo}"], shown[f"model_device_tflops_{hi}"],
                      colors=["#888888" if k == "xla" else "#1f77b4" for k in shown.kernel], lw=width)
        ax.plot(shown.model_device_tflops, y, "o", color="black", ms=4)
        ax.set_yticks(y, labels, fontsize=8)
        ax.set_xlabel("modelled device TFLOP/s (estimate)")
        versions = ", ".join(sorted(set(mine.libtpu_version.dropna().astype(str))))
        ax.set_title(f"{target}, estimated by libtpu {versions}" if versions else target, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"{title}\nestimates (libtpu compile + timing model fitted on the post's {POST_CHIP} "
                 "numbers); bars: 80 % and 95 % prediction intervals", fontsize=9)
    fig.tight_layout()
    from tpu_matmul_repro.experiments.core.tables import write_atomic  # a failed write keeps the old one

    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=120, format=str(path).rsplit(".", 1)[-1]))
    plt.close(fig)
