#!/usr/bin/env python3
"""The alpha-beta model of each all-reduce implementation from bench_allreduce's JSON files
(tools/allreduce writes them): per rank count and implementation, the time of one all-reduce
fitted as T(bytes) = alpha + bytes / bw over every size measured, and, per size, the
implementation that `primbench net --allreduce-json` would project with (the fastest measured
busbw at that size)."""
import argparse
import json
import os
import re
import statistics
import sys

PROG = "allreduce_fit"


def load_runs(paths):
    """{ranks: {impl: {bytes: [seconds per all-reduce, ...]}}} and {ranks: {bytes: {impl: [busbw]}}}."""
    times, busbw = {}, {}
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            print("%s: skipping %s: %s" % (PROG, path, e), file=sys.stderr)
            continue
        for b in data.get("benchmarks", []):
            if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
                continue
            m = re.match(r"allreduce/([^/]+/[^/]+)/", b.get("name", ""))
            n = re.match(r"n(\d+)", b.get("label", ""))
            if not m or not n or "ranks" not in b or "real_time" not in b:
                continue
            unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
            p, impl, nbytes = int(b["ranks"]), m.group(1), 4 * int(n.group(1))
            if nbytes == 0:
                continue
            times.setdefault(p, {}).setdefault(impl, {}).setdefault(nbytes, []).append(
                b["real_time"] * unit)
            if b.get("busbw"):
                busbw.setdefault(p, {}).setdefault(nbytes, {}).setdefault(impl, []).append(
                    b["busbw"])
    return times, busbw


def fit(points):
    """alpha (s), bw (bytes/s), worst relative residual: least squares of the relative error
    (every size counts alike, small ones fix alpha, large ones the bandwidth)."""
    xs = sorted(points)
    if len(xs) < 2:
        return None
    # Minimise sum(((a + c*x) / t - 1)^2): normal equations in (a, c) with weights 1/t^2.
    s00 = s01 = s11 = r0 = r1 = 0.0
    for x in xs:
        t = statistics.median(points[x])
        w = 1.0 / (t * t)
        s00 += w
        s01 += w * x
        s11 += w * x * x
        r0 += w * t
        r1 += w * x * t
    det = s00 * s11 - s01 * s01
    if det <= 0:
        return None
    a = (r0 * s11 - r1 * s01) / det
    c = (s00 * r1 - s01 * r0) / det
    if a < 0:  # no negative latency: the best fit with alpha = 0
        a, c = 0.0, r1 / s11
    if c <= 0:
        return None
    worst = max(abs((a + c * x) / statistics.median(points[x]) - 1) for x in xs)
    return a, 1.0 / c, worst


def size_name(nbytes):
    n = nbytes / 4
    for unit, div in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= div:
            return "%g%s" % (round(n / div, 1), unit)
    return "%d" % n


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__)
    ap.add_argument("paths", nargs="+", help="bench_allreduce JSON files or folders of them")
    ap.add_argument("--rate", help="the link rate to compare with (tc form: 10gbit, 1gbit)")
    ap.add_argument("--min-floats", type=float, default=1e6,
                    help="fit sizes of at least this many floats (default 1e6: tools/cluster's "
                         "tbf passes a burst of 1 ms of the rate, at least 128 KiB, at memory "
                         "speed, so smaller messages do not see the link rate)")
    args = ap.parse_args()
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p)
                            if f.startswith("bench_allreduce_np") and f.endswith(".json"))
        else:
            files.append(p)
    rate = None
    if args.rate and args.rate != "none":
        m = re.match(r"^(\d+)(bit|kbit|mbit|gbit)$", args.rate)
        if not m:
            print("%s: --rate: '%s' is not a rate like 10gbit" % (PROG, args.rate), file=sys.stderr)
            return 2
        rate = int(m.group(1)) * {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[m.group(2)] / 8
    times, busbw = load_runs(files)
    if not times:
        print("%s: no all-reduce results in %s" % (PROG, " ".join(args.paths)), file=sys.stderr)
        return 1
    print("alpha-beta fit: one all-reduce takes alpha + bytes / bw (relative least squares over "
          "the sizes of at least %g floats; alpha >= 0); busbw = 2(p-1)/p x bw" % args.min_floats +
          ("; link rate %.3f GB/s" % (rate / 1e9) if rate else ""))
    print("%-5s %-24s %6s %11s %10s %12s %9s" % ("ranks", "implementation", "sizes", "alpha_us",
                                                 "bw_GB/s", "busbw_GB/s", "max_resid"))
    for p in sorted(times):
        for impl in sorted(times[p]):
            used = {b: t for b, t in times[p][impl].items() if b >= 4 * args.min_floats}
            f = fit(used)
            if not f:
                continue
            a, bw, worst = f
            print("%-5d %-24s %6d %11.1f %10.3f %12.3f %8.0f%%" % (
                p, impl, len(used), a * 1e6, bw / 1e9, 2.0 * (p - 1) / p * bw / 1e9, 100 * worst))
    print("\nmeasured busbw per size (median of the repetitions) and the implementation the "
          "projection picks (the fastest)" + (", as % of the link rate" if rate else ""))
    for p in sorted(busbw):
        for nbytes in sorted(busbw[p]):
            impls = sorted(((statistics.median(v), i) for i, v in busbw[p][nbytes].items()),
                           reverse=True)
            cells = ", ".join("%s %.3f%s" % (i, v / 1e9, " (%.0f%%)" % (100 * v / rate) if rate
                                              else "") for v, i in impls)
            print("%-5d %-7s picks %-20s  %s" % (p, size_name(nbytes), impls[0][1], cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
