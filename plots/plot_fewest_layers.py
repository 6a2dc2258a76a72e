"""For word problems: the fewest layers whose mean (over seeds) primary metric passes a threshold
(default > 90% sequence accuracy), per encoding, against length. One figure per group of runs that
differ only in encoding, layers and seed; groups with a single depth or no per-length breakdown are
skipped. Lengths longer than the training words (task.train_max_length) are shaded and marked in
the CSV (`beyond_training`): a depth that fails there failed to extrapolate, not to learn."""
import math

import find_matplotlib  # noqa: F401  (before matplotlib)
import matplotlib.pyplot as plt

import plot_lengths
import results as R
import style

FREE = ["model.encoding", "model.encoding_options", "model.n_layers", "seed"]
THRESHOLD = 0.9


def layers(run):
    return run["config"]["model"]["n_layers"]


def fewest(runs, key, metric, higher_is_better, threshold):
    """{group: fewest layers passing, or None} for runs of one encoding."""
    by_depth = {}
    for r in runs:
        by_depth.setdefault(layers(r), []).append(plot_lengths.per_group(r, key, metric))
    groups = sorted(set().union(*[v for vs in by_depth.values() for v in vs]))
    out = {}
    for g in groups:
        out[g] = None
        for depth in sorted(by_depth):
            m, _, _ = R.mean_std([v.get(g) for v in by_depth[depth]])
            if m is not None and (m > threshold if higher_is_better else m < threshold):
                out[g] = depth
                break
    return out


def longest_trained(runs, key):
    """The longest training length shared by the runs, where the breakdown is by length; else None.

    >>> runs = [{"config": {"task": {"train_max_length": 8}}}] * 2
    >>> longest_trained(runs, "per_length")
    8
    >>> longest_trained(runs + [{"config": {"task": {"train_max_length": 16}}}], "per_length") is None
    True
    >>> longest_trained(runs, "per_book_size") is None
    True
    >>> longest_trained([{"config": {"task": {"length": 6}}}], "per_length") is None
    True
    """
    lengths = {r["config"].get("task", {}).get("train_max_length") for r in runs}
    return lengths.pop() if key == "per_length" and len(lengths) == 1 else None


def shade_beyond(ax, groups, longest):
    """Shades the lengths above `longest` (log-2 axis: from halfway, in log terms, to the next one)."""
    beyond = [g for g in groups if g > longest]
    if not beyond:
        return
    start = math.sqrt(longest * min(beyond))  # training lengths are at least 1
    ax.axvspan(start, max(beyond) * math.sqrt(2), color="0.9", zorder=0)
    ax.text(start, 1.0, " longer than training", transform=ax.get_xaxis_transform(), fontsize=7, va="top",
            color="0.4")


def plot(all_results, out_dir, threshold=THRESHOLD):
    style.apply_defaults()
    written = []
    for f in R.figures(all_results, FREE):
        key = R.breakdown_key(f.runs)
        depths = sorted({layers(r) for r in f.runs})
        if key is None or len(depths) < 2:
            continue
        fig, ax = plt.subplots(figsize=(5, 3.4))
        rows = []
        longest = longest_trained(f.runs, key)
        groups = set()
        for i, enc in enumerate(f.encodings):
            result = fewest(f.of(enc), key, f.metric, f.higher_is_better, threshold)
            groups |= set(result)
            for g, depth in result.items():
                beyond = "" if longest is None else ("yes" if g > longest else "no")
                rows.append([enc, g, f.metric, threshold, "" if depth is None else depth, beyond])
            # a small vertical offset per encoding keeps overlapping lines apart
            offset = (i - (len(f.encodings) - 1) / 2) * 0.04
            xs = [g for g, d in result.items() if d is not None]
            ax.plot(xs, [result[g] + offset for g in xs], marker="o", ms=4, color=style.color(enc),
                    label=style.label(enc))
            # lengths where no depth passes sit on a row of their own above the deepest model
            none = [g for g, d in result.items() if d is None]
            ax.plot(none, [depths[-1] + 1 + offset] * len(none), linestyle="none", marker="x", ms=5,
                    color=style.color(enc))
        if longest is not None:
            shade_beyond(ax, groups, longest)
        ax.set_xscale("log", base=2)
        ax.set_yticks(depths + [depths[-1] + 1])
        ax.set_yticklabels([str(d) for d in depths] + ["none ≤ {}".format(depths[-1])])
        group_name = key[len("per_"):]
        ax.set_xlabel(group_name.replace("_", " "))
        ax.set_ylabel("fewest layers with {} {} {:g}".format(f.metric.replace("_", " "),
                                                             ">" if f.higher_is_better else "<", threshold))
        ax.set_title(f.title + " (×: no depth up to {} passes)".format(depths[-1]), fontsize=9)
        style.legend(ax)
        written.append(R.finish(fig, out_dir, "fewest-layers-" + f.name,
                                ["encoding", group_name, "metric", "threshold", "fewest_layers", "beyond_training"],
                                rows))
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
