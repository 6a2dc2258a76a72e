"""Line plot of the primary metric against a numeric config key that the sweep varies (task.n_back
for MQRAR-N, model.n_layers, training.steps, optimizer.lr, …), one line per encoding, mean over
seeds with a ± std band, one panel per eval split; one figure per such key and per group of runs
that differ only in encoding, seed and that key. Keys with fewer than two values in a group are
skipped."""
import json

import find_matplotlib  # noqa: F401  (before matplotlib)
import matplotlib.pyplot as plt

import results as R
import style

FREE = ["model.encoding", "model.encoding_options", "seed"]


def numeric_axes(results):
    """Dotted config keys (outside FREE) whose values are numbers and differ between finished runs."""
    values = {}
    for r in results:
        if r.get("status") != "done":
            continue
        for key, text in R.flatten(r["config"]).items():
            values.setdefault(key, set()).add(text)
    axes = []
    for key, texts in sorted(values.items()):
        parsed = [json.loads(t) for t in texts]
        if (len(texts) > 1 and key not in FREE
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in parsed)):
            axes.append(key)
    return axes


def axis_values(runs, axis):
    """{id(run): the axis value as JSON text} of the runs whose config has the key (a key inside
    encoding_options, say, exists for the encodings that take that option only).

    >>> runs = [{"config": {"model": {"encoding": "path", "encoding_options": {"beta_clip_eps": 0.001}}}},
    ...         {"config": {"model": {"encoding": "nope", "encoding_options": {}}}}]
    >>> list(axis_values(runs, "model.encoding_options.beta_clip_eps").values())
    ['0.001']
    """
    values = {}
    for r in runs:
        x = R.flatten(r["config"]).get(axis)
        if x is not None:
            values[id(r)] = x
    return values


def plot(all_results, out_dir):
    style.apply_defaults()
    written = []
    for axis in numeric_axes(all_results):
        short = axis.split(".")[-1]
        for f in R.figures(all_results, FREE + [axis]):
            x_of = axis_values(f.runs, axis)  # runs whose config lacks the key stay off this figure
            xs_all = sorted(set(x_of.values()), key=float)
            if len(xs_all) < 2:
                continue
            fig, axes = plt.subplots(1, len(f.splits), figsize=(3.6 * len(f.splits) + 1.2, 3.2), squeeze=False)
            rows = []
            for ax, split in zip(axes[0], f.splits):
                for enc in f.encodings:
                    xs, means, lo, hi = [], [], [], []
                    for x in xs_all:
                        runs = [r for r in f.of(enc) if x_of.get(id(r)) == x]
                        m, s, n = R.mean_std([r["metrics"].get(split, {}).get(f.metric) for r in runs])
                        rows.append([enc, split, json.loads(x), f.metric, m, s, n])
                        if m is None:
                            continue
                        low, high = R.band(m, s, f.metric)
                        xs.append(float(x))
                        means.append(m * f.scale)
                        lo.append(low * f.scale)
                        hi.append(high * f.scale)
                    ax.plot(xs, means, marker="o", ms=3, color=style.color(enc), label=style.label(enc))
                    ax.fill_between(xs, lo, hi, color=style.color(enc), alpha=0.15, linewidth=0)
                values = [float(x) for x in xs_all]
                if min(values) > 0 and max(values) >= 8 * min(values):
                    ax.set_xscale("log")
                ax.set_xticks(values)
                ax.set_xticklabels([f"{v:g}" for v in values])
                ax.set_xlabel(short.replace("_", " "))
                ax.set_title(split)
            axes[0][0].set_ylabel(f.metric_label)
            fig.suptitle(f.title, y=1.04)  # above the panels' split titles
            style.legend(axes[0][-1])
            written.append(R.finish(fig, out_dir, f"sweep-{short}-{f.name}",
                                    ["encoding", "split", short, "metric", "mean", "std", "n"], rows))
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
