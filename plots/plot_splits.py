"""Bar chart of the primary metric (error rate or accuracy) per encoding per eval split, mean ± std
over seeds; one figure per group of runs that differ only in encoding and seed."""
import os

import find_matplotlib  # noqa: F401  (before matplotlib)
import matplotlib.pyplot as plt

import results as R
import style

FREE = ["model.encoding", "model.encoding_options", "seed"]


def plot(all_results, out_dir):
    style.apply_defaults()
    written = []
    for name, title, runs in R.figure_groups(all_results, FREE):
        metric, _ = R.primary_metric(runs)
        scale = 100.0 if R.is_ratio(metric) else 1.0
        splits = runs[0].get("eval_splits") or sorted(runs[0]["metrics"])
        encodings = sorted({R.encoding(r) for r in runs}, key=style.order_key)
        width = 0.8 / len(encodings)
        fig, ax = plt.subplots(figsize=(max(4.5, 0.45 * len(splits) * len(encodings) + 1.5), 3.4))
        rows = []
        for i, enc in enumerate(encodings):
            means, stds = [], []
            for split in splits:
                m, s, n = R.mean_std([r["metrics"].get(split, {}).get(metric) for r in runs if R.encoding(r) == enc])
                rows.append([enc, split, metric, m, s, n])
                means.append(0.0 if m is None else m * scale)
                stds.append(0.0 if s is None else s * scale)
            xs = [j + (i - (len(encodings) - 1) / 2) * width for j in range(len(splits))]
            ax.bar(xs, means, width, yerr=stds, capsize=2, color=style.color(enc), label=style.label(enc))
        ax.set_xticks(range(len(splits)))
        ax.set_xticklabels(splits)
        ax.set_ylabel(metric.replace("_", " ") + (" (%)" if scale == 100.0 else ""))
        ax.set_title(title)
        ax.legend(fontsize=8, ncol=min(3, len(encodings)))
        stem = "splits-" + name
        R.write_csv(os.path.join(out_dir, stem + ".csv"), ["encoding", "split", "metric", "mean", "std", "n"], rows)
        written.append(R.save(fig, out_dir, stem))
        plt.close(fig)
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
