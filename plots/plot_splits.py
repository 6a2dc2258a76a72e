"""Bar chart of the primary metric (error rate or accuracy) per encoding per eval split, mean ± std
over seeds (clipped to 0–100 % for rates); one figure per group of runs that differ only in encoding and seed."""
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
            for split in f.splits:
                m, s, n = R.mean_std([r["metrics"].get(split, {}).get(f.metric) for r in f.of(enc)])
                rows.append([enc, split, f.metric, m, s, n])
                low, high = (0.0, 0.0) if m is None else R.band(m, s, f.metric)
                means.append(0.0 if m is None else m * f.scale)
                below.append(0.0 if m is None else (m - low) * f.scale)
                above.append(0.0 if m is None else (high - m) * f.scale)
            xs = [j + (i - (len(f.encodings) - 1) / 2) * width for j in range(len(f.splits))]
            ax.bar(xs, means, width, yerr=[below, above], capsize=2, color=style.color(enc), label=style.label(enc))
        ax.set_xticks(range(len(f.splits)))
        ax.set_xticklabels(f.splits)
        ax.set_ylabel(f.metric_label)
        ax.set_title(f.title)
        style.legend(ax)
        written.append(R.finish(fig, out_dir, "splits-" + f.name, ["encoding", "split", "metric", "mean", "std", "n"],
                                rows))
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
