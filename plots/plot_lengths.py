"""Line plot of the primary metric against length (or another per-group value such as book size)
per encoding, mean over seeds with a ± std band; one figure per group of runs that differ only in
encoding and seed. Runs without a per-group breakdown are skipped."""
import os

import find_matplotlib  # noqa: F401  (before matplotlib)
import matplotlib.pyplot as plt

import results as R
import style

FREE = ["model.encoding", "model.encoding_options", "seed"]


def per_group(run, key, metric):
    """{group value: metric} over every split of one run."""
    out = {}
    for split_metrics in run.get("metrics", {}).values():
        for group, m in split_metrics.get(key, {}).items():
            out[float(group)] = m.get(metric)
    return out


def plot(all_results, out_dir):
    style.apply_defaults()
    written = []
    for name, title, runs in R.figure_groups(all_results, FREE):
        key = R.breakdown_key(runs)
        if key is None:
            continue
        metric, _ = R.primary_metric(runs)
        scale = 100.0 if R.is_ratio(metric) else 1.0
        fig, ax = plt.subplots(figsize=(5, 3.4))
        rows = []
        groups_seen = set()
        for enc in sorted({R.encoding(r) for r in runs}, key=style.order_key):
            values = [per_group(r, key, metric) for r in runs if R.encoding(r) == enc]
            groups = sorted(set().union(*values))
            groups_seen.update(groups)
            xs, means, lo, hi = [], [], [], []
            for g in groups:
                m, s, n = R.mean_std([v.get(g) for v in values])
                rows.append([enc, g, metric, m, s, n])
                if m is None:
                    continue
                xs.append(g)
                means.append(m * scale)
                lo.append((m - s) * scale)
                hi.append((m + s) * scale)
            ax.plot(xs, means, marker="o", ms=3, color=style.color(enc), label=style.label(enc))
            ax.fill_between(xs, lo, hi, color=style.color(enc), alpha=0.15, linewidth=0)
        if groups_seen and max(groups_seen) >= 8 * max(1.0, min(groups_seen)):
            ax.set_xscale("log", base=2)
        ax.set_xlabel(key[len("per_"):].replace("_", " "))
        ax.set_ylabel(metric.replace("_", " ") + (" (%)" if scale == 100.0 else ""))
        ax.set_title(title)
        ax.legend(fontsize=8)
        stem = "lengths-" + name
        R.write_csv(os.path.join(out_dir, stem + ".csv"),
                    ["encoding", key[len("per_"):], "metric", "mean", "std", "n"], rows)
        written.append(R.save(fig, out_dir, stem))
        plt.close(fig)
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
