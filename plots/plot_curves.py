"""Training curves per encoding (mean over seeds): the training loss against step, and the primary
eval metric of each split against step (line style per split); one figure per group of runs that
differ only in encoding and seed. Interrupted runs count up to where they stopped."""
import find_matplotlib  # noqa: F401  (before matplotlib)
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

import results as R
import style

FREE = ["model.encoding", "model.encoding_options", "seed"]
SPLIT_STYLES = ["-", "--", ":", "-."]


def mean_by_step(curves, value, ended=None):
    """[(step, mean)] of value(line) over the curves, for the steps where any curve has it. A curve
    that ended earlier than the others (a run stopped early at its target) holds its last value
    from there on, so that the mean does not jump to the runs still training; one that was cut
    (`ended` False for it: an interrupted run) counts only up to where it stops.

    >>> a = [{"step": 1, "v": 0.0}, {"step": 2, "v": 1.0}]
    >>> b = [{"step": 1, "v": 0.0}, {"step": 2, "v": 0.5}, {"step": 3, "v": 0.25}]
    >>> mean_by_step([a, b], lambda line: line["v"])
    [(1, 0.0), (2, 0.75), (3, 0.625)]
    >>> mean_by_step([a, b], lambda line: line["v"], ended=[False, True])
    [(1, 0.0), (2, 0.75), (3, 0.25)]
    """
    ended = [True] * len(curves) if ended is None else ended
    series = [[(line["step"], v) for line in lines if (v := value(line)) is not None] for lines in curves]
    steps = sorted({s for points in series for s, _ in points})
    by_step = {s: [] for s in steps}
    for points, holds in zip(series, ended):
        own = dict(points)
        last_step = points[-1][0] if points else None
        for s in steps:
            if s in own:
                by_step[s].append(own[s])
            elif holds and last_step is not None and s > last_step:
                by_step[s].append(points[-1][1])
    return [(s, R.mean_std(vs)[0]) for s, vs in by_step.items() if vs]


def interrupted(runs):
    """How many of the runs were interrupted (their curves stop where they were cut).

    >>> interrupted([{"status": "done"}, {"status": "interrupted"}])
    1
    """
    return sum(not R.ended(r) for r in runs)


def plot(all_results, out_dir):
    style.apply_defaults()
    written = []
    for f in R.figures(all_results, FREE, R.CURVE_STATUSES):
        fig, (loss_ax, eval_ax) = plt.subplots(1, 2, figsize=(9, 3.4))
        rows = []
        for enc in f.encodings:
            runs = f.of(enc)
            curves, ended = [R.load_curve(r) for r in runs], [R.ended(r) for r in runs]
            loss = mean_by_step(curves, lambda line: line.get("loss") if "eval" not in line else None, ended)
            rows += [[enc, s, "train_loss", v] for s, v in loss]
            loss_ax.plot([s for s, _ in loss], [v for _, v in loss], color=style.color(enc))
            for i, split in enumerate(f.splits):
                ev = mean_by_step(curves, lambda line: line.get("eval", {}).get(split, {}).get(f.metric), ended)
                rows += [[enc, s, split + " " + f.metric, v] for s, v in ev]
                eval_ax.plot([s for s, _ in ev], [v * f.scale for _, v in ev], SPLIT_STYLES[i % len(SPLIT_STYLES)],
                             marker="o", ms=2, color=style.color(enc))
        loss_ax.set_xlabel("step")
        loss_ax.set_ylabel("training loss")
        loss_ax.set_yscale("log")
        eval_ax.set_xlabel("step")
        eval_ax.set_ylabel(f.metric_label)
        handles = [Line2D([], [], color=style.color(enc), label=style.label(enc) + (
            " ({} interrupted)".format(cut) if (cut := interrupted(f.of(enc))) else "")) for enc in f.encodings]
        handles += [Line2D([], [], color="black", linestyle=SPLIT_STYLES[i % len(SPLIT_STYLES)], label="eval: " + split)
                    for i, split in enumerate(f.splits)]
        style.legend(eval_ax, handles=handles)
        fig.suptitle(f.title)
        written.append(R.finish(fig, out_dir, "curves-" + f.name, ["encoding", "step", "series", "value"], rows))
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
