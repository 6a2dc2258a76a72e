"""Training curves per encoding (mean over seeds): the training loss against step, and the primary
eval metric of each split against step (line style per split); one figure per group of runs that
differ only in encoding and seed."""
import os

import find_matplotlib  # noqa: F401  (before matplotlib)
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

import results as R
import style

FREE = ["model.encoding", "model.encoding_options", "seed"]
SPLIT_STYLES = ["-", "--", ":", "-."]


def mean_by_step(curves, value):
    """[(step, mean)] of value(line) over the curves, for the steps where any curve has it."""
    by_step = {}
    for lines in curves:
        for line in lines:
            v = value(line)
            if v is not None:
                by_step.setdefault(line["step"], []).append(v)
    return [(s, R.mean_std(vs)[0]) for s, vs in sorted(by_step.items())]


def plot(all_results, out_dir):
    style.apply_defaults()
    written = []
    for name, title, runs in R.figure_groups(all_results, FREE):
        metric, _ = R.primary_metric(runs)
        scale = 100.0 if R.is_ratio(metric) else 1.0
        splits = runs[0].get("eval_splits") or sorted(runs[0]["metrics"])
        fig, (loss_ax, eval_ax) = plt.subplots(1, 2, figsize=(9, 3.4))
        rows = []
        for enc in sorted({R.encoding(r) for r in runs}, key=style.order_key):
            curves = [R.load_curve(r) for r in runs if R.encoding(r) == enc]
            loss = mean_by_step(curves, lambda l: l.get("loss") if "eval" not in l else None)
            rows += [[enc, s, "train_loss", v] for s, v in loss]
            loss_ax.plot([s for s, _ in loss], [v for _, v in loss], color=style.color(enc), label=style.label(enc))
            for i, split in enumerate(splits):
                ev = mean_by_step(curves, lambda l: l.get("eval", {}).get(split, {}).get(metric))
                rows += [[enc, s, split + " " + metric, v] for s, v in ev]
                eval_ax.plot([s for s, _ in ev], [v * scale for _, v in ev], SPLIT_STYLES[i % len(SPLIT_STYLES)],
                             marker="o", ms=2, color=style.color(enc))
        loss_ax.set_xlabel("step")
        loss_ax.set_ylabel("training loss")
        loss_ax.set_yscale("log")
        loss_ax.legend(fontsize=8)
        eval_ax.set_xlabel("step")
        eval_ax.set_ylabel(metric.replace("_", " ") + (" (%)" if scale == 100.0 else ""))
        eval_ax.legend([Line2D([], [], color="black", linestyle=SPLIT_STYLES[i % len(SPLIT_STYLES)]) for i in
                        range(len(splits))], splits, fontsize=8, title="eval split", title_fontsize=8)
        fig.suptitle(title)
        stem = "curves-" + name
        R.write_csv(os.path.join(out_dir, stem + ".csv"), ["encoding", "step", "series", "value"], rows)
        written.append(R.save(fig, out_dir, stem))
        plt.close(fig)
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
