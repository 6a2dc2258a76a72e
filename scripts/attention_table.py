#!/usr/bin/env python3
"""Prints the markdown table of an attention benchmark run, made from its JSON files rather than
copied by hand: `pathbench bench-attention --out A` and `scripts/bench_sdpa.py --out S` of one device
call (or several S, each timing shapes the others do not: a later call's `bench_sdpa.py --shapes …`
for what an earlier one did not reach). One row per B·T·H·D shape, one column per kernel, the median
ms of forward+backward (or of the forward, --forward); SDPA first, then the encodings in the order A
lists them; fla's kernels, where S holds them (bench_sdpa.py --fla), in parentheses beside the
encoding they implement. With --ratio each of our cells also gets its ratio to SDPA (or, for PaTH
and PaTH-FoX, to fla where S holds fla). With --far-reaching F, a last column "sba far" holds the
stick-breaking times of F, a run of `bench-attention --inputs far-reaching` (where no key block's
weights vanish; A's random inputs let its kernels skip all but the nearest blocks).

Usage: scripts/attention_table.py A.json S.json [S2.json …] [--forward] [--ratio] [--far-reaching F.json]"""
import argparse
import json

# fla's kernels, keyed by the encoding whose cell shows them (bench_sdpa.py's names).
FLA_OF = {"path": "fla_path", "path_fox": "fla_path_fox", "fox": "fla_fox"}
# The encodings whose --ratio is to fla (the targets compare PaTH with fla, the others with SDPA).
RATIO_TO_FLA = ("path", "path_fox")


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"attention_table.py: cannot read {path}: {e}")


def medians(doc, field, path):
    """{(encoding, (B, T, H, D)): ms} of a benchmark JSON, and its encodings and shapes in order of
    appearance."""
    cells, order, shapes = {}, [], []
    for r in doc.get("results", []):
        try:
            shape = (r["batch"], r["length"], r["heads"], r["head_dim"])
            cells[(r["encoding"], shape)] = r[field]
        except KeyError as e:
            raise SystemExit(f"attention_table.py: {path}: a result lacks {e}")
        if r["encoding"] not in order:
            order.append(r["encoding"])
        if shape not in shapes:
            shapes.append(shape)
    return cells, order, shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("attention", help="JSON of `pathbench bench-attention`")
    ap.add_argument("sdpa", nargs="+", help="JSON of scripts/bench_sdpa.py from the same device call (several: "
                    "each a kernel and shape the others lack)")
    ap.add_argument("--forward", action="store_true", help="forward medians instead of forward+backward")
    ap.add_argument("--ratio", action="store_true", help="each of our cells also as a ratio to SDPA (or fla)")
    ap.add_argument("--far-reaching", metavar="F", help="JSON of `bench-attention --inputs far-reaching`: a column of its sba times")
    args = ap.parse_args()
    field = "forward_ms_median" if args.forward else "forward_backward_ms_median"
    ours, encodings, shapes = medians(load(args.attention), field, args.attention)
    ref = {}
    for path in args.sdpa:
        cells, _, _ = medians(load(path), field, path)
        for (kernel, shape), ms in cells.items():
            if (kernel, shape) in ref:
                raise SystemExit(f"attention_table.py: {path} times {kernel} at {'·'.join(map(str, shape))} again "
                                 f"(an earlier S file has it)")
            ref[(kernel, shape)] = ms
    columns = [(e, e) for e in encodings]  # (header, encoding key in ours)
    if args.far_reaching:
        far = load(args.far_reaching)
        if far.get("inputs") != "far-reaching":
            raise SystemExit(f"attention_table.py: {args.far_reaching} is not a run with --inputs far-reaching")
        far_cells, _, _ = medians(far, field, args.far_reaching)
        for (encoding, shape), ms in far_cells.items():
            if encoding == "sba":
                ours[("sba far", shape)] = ms
        columns.append(("sba far", "sba far"))

    def cell(encoding, shape):
        ms = ours.get((encoding, shape))
        if ms is None:
            return "—"
        text = f"{ms:.2f}"
        fla = ref.get((FLA_OF.get(encoding), shape))
        base = fla if fla is not None and encoding in RATIO_TO_FLA else ref.get(("sdpa_flash", shape))
        if fla is not None:
            text += f" (fla {fla:.2f})"
        if args.ratio and base:
            text += f" {ms / base:.2f}×"
        return text

    sources = ", ".join(f for f in (args.attention, *args.sdpa, args.far_reaching) if f)
    print(f"{'forward' if args.forward else 'forward+backward'} ms (median), {sources}")
    print("| B·T·H·D | SDPA | " + " | ".join(h for h, _ in columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for shape in shapes:
        sdpa = ref.get(("sdpa_flash", shape))
        row = [("·".join(map(str, shape))), f"{sdpa:.2f}" if sdpa is not None else "—"]
        row += [cell(key, shape) for _, key in columns]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
