"""Line plot of the primary metric against length (or another per-group value such as book size)
per encoding, mean over seeds with a ± std band; one figure per group of runs that differ only in
encoding and seed. Runs without a per-group breakdown are skipped."""
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
    for f in R.figures(all_results, FREE):
        key = R.breakdown_key(f.runs)
        if key is None:
            continue
        fig, ax = plt.subplots(figsize=(5, 3.4))
        rows = []
        groups_seen = set()
        for enc in f.encodings:
            values = [per_group(r, key, f.metric) for r in f.of(enc)]
            groups = sorted(set().union(*values))
            groups_seen.update(groups)
            xs, means, lo, hi = [], [], [], []
            for g in groups:
                m, s, n = R.mean_std([v.get(g) for v in values])
                rows.append([enc, g, f.metric, m, s, n])
                if m is None:
                    continue
                low, high = R.band(m, s, f.metric)
                xs.append(g)
                means.append(m * f.scale)
                lo.append(low * f.scale)
                hi.append(high * f.scale)
            ax.plot(xs, means, marker="o", ms=3, color=style.color(enc), label=style.label(enc))
            ax.fill_between(xs, lo, hi, color=style.color(enc), alpha=0.15, linewidth=0)
        if groups_seen and max(groups_seen) >= 8 * max(1.0, min(groups_seen)):
            ax.set_xscale("log", base=2)
        group_name = key[len("per_"):]
        ax.set_xlabel(group_name.replace("_", " "))
        ax.set_ylabel(f.metric_label)
        ax.set_title(f.title)
        style.legend(ax)
        written.append(R.finish(fig, out_dir, "lengths-" + f.name, ["encoding", group_name, "metric", "mean", "std", "n"],
                                rows))
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
