"""Every figure for a results folder: splits (bar), lengths (line), fewest layers (word problems),
the metric against each numeric config key the sweep varies (line), training curves and the share
of seeds passing (accuracy > 90 %, error < 10 %) against step, each PNG with the CSV behind it. Usage: plot_all.py RESULTS_DIR
[--out DIR]."""
import find_matplotlib  # noqa: F401  (before matplotlib)

import plot_axis
import plot_curves
import plot_fewest_layers
import plot_lengths
import plot_passing
import plot_splits
import results as R


def plot(all_results, out_dir):
    written = []
    for module in (plot_splits, plot_lengths, plot_fewest_layers, plot_axis, plot_curves, plot_passing):
        written += module.plot(all_results, out_dir)
    return written


if __name__ == "__main__":
    R.main(plot, __doc__)
