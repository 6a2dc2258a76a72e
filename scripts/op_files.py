#!/usr/bin/env python3
"""Reads the safetensors files of `pathbench op` and of recorded attention calls (`pathbench replay
--record-attention`), needs numpy. Its read, write and to_bf16 also serve the other diagnosis scripts.

  compare REFERENCE OTHER...   per tensor of REFERENCE: its largest finite magnitude and the slice
                               holding it, the relative error
                               ‖other − ref‖/‖ref‖ and largest difference of each OTHER, and the
                               non-finite entries of each, with the first slices (leading index)
                               that hold them
  slice FILE INDEX OUT         writes slice INDEX (of the leading dimensions, flattened) of every
                               tensor of FILE to OUT, metadata kept: a small reproducer of one
                               slice of a large call (slices are independent in every op)
"""
import argparse
import json
import struct
import sys

try:
    import numpy as np
except ImportError:
    sys.exit("op_files.py: needs numpy (try /usr/bin/python3)")

DTYPES = {"F32": np.float32, "F64": np.float64}


def read(path):
    """(tensors as arrays, metadata) of a safetensors file."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        if h["dtype"] not in DTYPES:
            sys.exit(f"{path}: tensor {name} has dtype {h['dtype']} (F32 or F64 expected)")
        begin, end = h["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=DTYPES[h["dtype"]]).reshape(h["shape"])
    return tensors, header.get("__metadata__", {})


def to_bf16(x):
    """x rounded to bfloat16 (round to nearest even), as float64: what a bf16 kernel stores."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.view(np.float32).astype(np.float64)


def write(path, tensors, metadata):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a).tobytes()
        dtype = next(k for k, v in DTYPES.items() if v == a.dtype)
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def slices_of(a):
    """a as [slices, ...] over its leading dimensions ([B, H, T, D] → [B·H, T, D]; [B, H, T] → [B·H, T])."""
    keep = 2 if a.ndim >= 4 else 1
    return a.reshape(-1, *a.shape[a.ndim - keep:])


def describe_non_finite(a):
    bad = ~np.isfinite(slices_of(a))
    count = int(bad.sum())
    if count == 0:
        return "all finite"
    where = np.nonzero(bad.reshape(bad.shape[0], -1).any(1))[0]
    return f"{count} non-finite in slices {', '.join(map(str, where[:8]))}{' …' if len(where) > 8 else ''}"


def compare(args):
    ref, _ = read(args.reference)
    others = [(path, read(path)[0]) for path in args.others]
    for name, r in ref.items():
        r64 = r.astype(np.float64)
        finite = np.isfinite(r64)
        size = np.where(np.isfinite(slices_of(r64)), np.abs(slices_of(r64)), 0).reshape(slices_of(r64).shape[0], -1).max(1)
        print(f"{name} {list(r.shape)}: largest |value| {size.max():.4g} in slice {int(size.argmax())}; "
              f"{describe_non_finite(r)} ({args.reference})")
        for path, tensors in others:
            if name not in tensors:
                print(f"    {path}: no tensor {name}")
                continue
            o = tensors[name].astype(np.float64)
            both = finite & np.isfinite(o)
            diff = np.abs(o - r64)[both]
            norm = np.linalg.norm(r64[both])
            rel = np.linalg.norm(diff) / norm if norm > 0 else np.linalg.norm(diff)
            print(f"    {path}: relative error {rel:.3g}, largest difference {diff.max() if diff.size else 0:.3g} "
                  f"(over entries finite in both); {describe_non_finite(o)}")


def take_slice(args):
    tensors, metadata = read(args.file)
    out = {name: slices_of(a)[args.index][None, None] for name, a in tensors.items()}
    write(args.out, out, metadata)
    print(f"wrote slice {args.index} of {args.file} to {args.out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare")
    c.add_argument("reference")
    c.add_argument("others", nargs="+")
    c.set_defaults(run=compare)
    s = sub.add_parser("slice")
    s.add_argument("file")
    s.add_argument("index", type=int)
    s.add_argument("out")
    s.set_defaults(run=take_slice)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
