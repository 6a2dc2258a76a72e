"""Seeds passing against step: per encoding, the share of its seeds whose periodic evaluation of the
primary metric (on the early-stop split, else the first split) passes a threshold at each
evaluation step: above 90 % for accuracies, below 10 % for error rates. One figure per group of
runs that differ only in encoding and seed, where every encoding has at least two seeds. Where each
run either learns or does not (word problems), this shows how soon and how often runs learn, which
a mean curve mixes together. Interrupted runs count up to their last evaluation."""
import find_matplotlib  # noqa: F401  (before matplotlib)
import matplotlib.pyplot as plt

import plot_curves
import results as R
import style

THRESHOLD = 0.9  # for higher-is-better ratios; 1 − THRESHOLD for lower-is-better ones


def passing_share(curves, split, metric, passes, ended=None):
    """[(step, share of the curves whose split's metric passes)]. A curve that ended early (a run
    stopped at its target) keeps its last evaluation from there on; one that was cut (`ended` False:
    an interrupted run) counts only up to its last evaluation.

    >>> a = [{"step": 1, "eval": {"s": {"m": 0.5}}}, {"step": 2, "eval": {"s": {"m": 0.95}}}]
    >>> b = [{"step": 1, "eval": {"s": {"m": 0.2}}}, {"step": 2, "eval": {"s": {"m": 0.3}}},
    ...      {"step": 3, "eval": {"s": {"m": 0.91}}}]
    >>> passing_share([a, b], "s", "m", lambda v: v > 0.9)
    [(1, 0.0), (2, 0.5), (3, 1.0)]
    >>> passing_share([a, b], "s", "m", lambda v: v < 0.1)
    [(1, 0.0), (2, 0.0), (3, 0.0)]
    >>> c = [{"step": 1, "eval": {"s": {"m": 0.95}}}]  # interrupted after step 1
    >>> d = [{"step": 1, "eval": {"s": {"m": 0.2}}}, {"step": 2, "eval": {"s": {"m": 0.3}}}]
    >>> passing_share([c, d], "s", "m", lambda v: v > 0.9, ended=[False, True])
    [(1, 0.5), (2, 0.0)]
    """
    def passed(line):
        value = line.get("eval", {}).get(split, {}).get(metric)
        return None if value is None else float(passes(value))

    return plot_curves.mean_by_step(curves, passed, ended)


def scored_split(f):
    """The split the runs stop early on, where it is one of theirs; else their first split."""
    split = f.runs[0]["config"].get("training", {}).get("early_stop_split")
    return split if split in f.splits else f.splits[0]


def plot(all_results, out_dir, threshold=THRESHOLD):
    style.apply_defaults()
    written = []
    for f in R.figures(all_results, plot_curves.FREE, R.CURVE_STATUSES):
        if not R.is_ratio(f.metric) or min(len(f.of(enc)) for enc in f.encodings) < 2:
            continue
        limit = threshold if f.higher_is_better else 1 - threshold
        sign = ">" if f.higher_is_better else "<"
        passes = (lambda v: v > limit) if f.higher_is_better else (lambda v: v < limit)
        split = scored_split(f)
        fig, ax = plt.subplots(figsize=(5, 3.4))
        rows = []
        for i, enc in enumerate(f.encodings):
            runs = f.of(enc)
            share = passing_share([R.load_curve(r) for r in runs], split, f.metric, passes, [R.ended(r) for r in runs])
            rows += [[enc, s, len(runs), v] for s, v in share]
            # a small vertical offset per encoding keeps equal shares (all or none) apart
            offset = (i - (len(f.encodings) - 1) / 2) * 0.8
            ax.plot([s for s, _ in share], [100 * v + offset for _, v in share], marker="o", ms=2,
                    color=style.color(enc),
                    label="{} ({} seeds{})".format(style.label(enc), len(runs), ", {} interrupted".format(cut)
                                                   if (cut := plot_curves.interrupted(runs)) else ""))
        ax.set_xlabel("step")
        ax.set_ylabel("% of seeds with\n{} {} {:g} %".format(f.metric.replace("_", " "), sign, 100 * limit))
        ax.set_ylim(-5, 105)
        ax.set_title("{} ({} split)".format(f.title, split), fontsize=9)
        style.legend(ax)
        written.append(R.finish(fig, out_dir, "passing-" + f.name, ["encoding", "step", "seeds", "share_passing"],
                                rows))
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
