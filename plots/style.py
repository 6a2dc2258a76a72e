"""One fixed order, label and color per position encoding, shared by every figure."""
import matplotlib

matplotlib.use("Agg")

ENCODINGS = ["nope", "rope", "fox", "sba", "path", "path_fox"]
LABELS = {"nope": "NoPE", "rope": "RoPE", "fox": "FoX", "sba": "SBA", "path": "PaTH", "path_fox": "PaTH-FoX"}
COLORS = {"nope": "#7f7f7f", "rope": "#1f77b4", "fox": "#2ca02c", "sba": "#9467bd", "path": "#d62728",
          "path_fox": "#ff7f0e"}
_EXTRA = ["#8c564b", "#e377c2", "#bcbd22", "#17becf"]


def order_key(encoding):
    """Sorts encodings in the fixed order; unknown ones after, alphabetically."""
    return (ENCODINGS.index(encoding), "") if encoding in ENCODINGS else (len(ENCODINGS), encoding)


def label(encoding):
    return LABELS.get(encoding, encoding)


def color(encoding):
    if encoding in COLORS:
        return COLORS[encoding]
    return _EXTRA[sum(map(ord, encoding)) % len(_EXTRA)]


def apply_defaults():
    matplotlib.rcParams.update({"figure.dpi": 120, "savefig.dpi": 150, "axes.grid": True, "grid.alpha": 0.3,
                                "axes.spines.top": False, "axes.spines.right": False, "font.size": 10})


def legend(ax, **kwargs):
    """A legend outside the axes on the right, so it never covers data."""
    return ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)
