"""Bar chart of the primary metric (error rate or accuracy) per encoding per eval split, mean ± std
over seeds (clipped to 0–100 % for rates), with every seed's value as a dot on its bar, so that
outcomes that split by seed (a run learns or it does not) show as such; one figure per group of
runs that differ only in encoding and seed."""
import find_matplotlib  # noqa: F401  (before matplotlib)
import matplotlib.pyplot as plt

import results as R
import style

FREE = ["model.encoding", "model.encoding_options", "seed"]


def plot(all_results, out_dir):
    style.apply_defaults()
    written = []
    for f in R.figures(all_results, FREE):
        width = 0.8 / len(f.encodings)
        fig, ax = plt.subplots(figsize=(max(4.5, 0.45 * len(f.splits) * len(f.encodings) + 1.5), 3.4))
        rows = []
        for i, enc in enumerate(f.encodings):
            means, below, above = [], [], []  # the ± std bar, clipped to the metric's range
            seeds = sorted(f.of(enc), key=lambda r: r["config"].get("seed", 0))
            dots = []  # per split: the scaled value of every seed with one
            for split in f.splits:
                per_seed = [(r["config"].get("seed"), r["metrics"].get(split, {}).get(f.metric)) for r in seeds]
                per_seed = [(seed, v) for seed, v in per_seed if isinstance(v, (int, float))]
                m, s, n = R.mean_std([v for _, v in per_seed])
                rows.append([enc, split, f.metric, m, s, n, " ".join(f"{seed}:{v:.6g}" for seed, v in per_seed)])
                low, high = (0.0, 0.0) if m is None else R.band(m, s, f.metric)
                means.append(0.0 if m is None else m * f.scale)
                below.append(0.0 if m is None else (m - low) * f.scale)
                above.append(0.0 if m is None else (high - m) * f.scale)
                dots.append([v * f.scale for _, v in per_seed])
            xs = [j + (i - (len(f.encodings) - 1) / 2) * width for j in range(len(f.splits))]
            ax.bar(xs, means, width, yerr=[below, above], capsize=2, color=style.color(enc), label=style.label(enc))
            for x, values in zip(xs, dots):
                if len(values) > 1:  # one seed: the bar is its value
                    ax.scatter([x] * len(values), values, s=9, color="black", alpha=0.6, linewidths=0, zorder=3)
        ax.set_xticks(range(len(f.splits)))
        ax.set_xticklabels(f.splits)
        ax.set_ylabel(f.metric_label)
        ax.set_title(f.title)
        style.legend(ax)
        written.append(R.finish(fig, out_dir, "splits-" + f.name, ["encoding", "split", "metric", "mean", "std", "n", "seeds"],
                                rows))
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
