#!/usr/bin/env python3
"""The alpha-beta model of each all-reduce implementation from bench_allreduce's JSON files
(tools/allreduce writes them): per run context (machine, ranks, hosts, link rate) and
implementation, the time of one all-reduce fitted as T(bytes) = alpha + bytes / bw over the
sizes measured, and, per size, the implementation that `primbench net --allreduce-json` would
project with (the highest mean busbw over the repetitions at that size, as it reads them).
Runs of different contexts (another link rate, another host count) are never fitted together."""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pbresults  # noqa: E402

PROG = "allreduce_fit"
RATE_RE = re.compile(r"^([1-9]\d*)(bit|kbit|mbit|gbit)$")


def rate_bytes(text):
    """Bytes per second of a tc rate (10gbit, 500mbit); None for 'none' or ''; ValueError else."""
    if not text or text == "none":
        return None
    m = RATE_RE.match(text)
    if not m:
        raise ValueError(text)
    return int(m.group(1)) * {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[m.group(2)] / 8


def group_of(ctx):
    """What runs must share to be fitted together: the machine (CPU and host name, as
    tools/report keys it), the rank count, the host count and the link rate."""
    machine = pbresults.context_key(ctx)[0]
    return (machine, str(ctx.get("mpi_hosts", "")), str(ctx.get("link_rate", "")))


def load_runs(files):
    """{group: {ranks: {"times": {impl: {bytes: [s]}}, "busbw": {bytes: {impl: [B/s]}}}}}."""
    groups = {}
    for path in files:
        loaded = pbresults.load(path, PROG)
        if loaded is None:
            continue
        ctx, benchmarks = loaded
        for b in benchmarks:
            if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
                continue
            m = re.match(r"allreduce/([^/]+/[^/]+)/", b.get("name", ""))
            n = re.match(r"n(\d+)", str(b.get("label", "")))
            t, ranks = pbresults.seconds(b), pbresults.num(b, "ranks")
            if not m or not n or t is None or t <= 0 or not ranks:
                continue
            impl, nbytes = m.group(1), 4 * int(n.group(1))
            if nbytes == 0:
                continue
            run = groups.setdefault(group_of(ctx), {}).setdefault(
                int(ranks), {"times": {}, "busbw": {}})
            run["times"].setdefault(impl, {}).setdefault(nbytes, []).append(t)
            bw = pbresults.num(b, "busbw")
            if bw:
                run["busbw"].setdefault(nbytes, {}).setdefault(impl, []).append(bw)
    return groups


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


def pct(value, rate):
    return " (%.0f%%)" % (100 * value / rate) if rate else ""


def report(group, p, run, link, rate, min_floats):
    machine, hosts = group[0], group[1]
    print("\n== %d ranks%s%s; %s" % (
        p, " on %s hosts" % hosts if hosts else "",
        ", link %s = %.3f GB/s" % (link, rate / 1e9) if rate else ", link rate unknown",
        machine or "machine unknown"))
    print("%-24s %5s %10s %9s %17s %9s" % ("implementation", "sizes", "alpha_us", "bw_GB/s",
                                           "busbw_GB/s" + (" (link)" if rate else ""),
                                           "max_resid"))
    for impl in sorted(run["times"]):
        used = {b: t for b, t in run["times"][impl].items() if b >= 4 * min_floats}
        f = fit(used)
        if not f:
            print("%-24s %5d  (no fit: needs 2 sizes of at least %s floats)" % (
                impl, len(used), size_name(4 * min_floats)))
            continue
        a, bw, worst = f
        busbw = 2.0 * (p - 1) / p * bw
        print("%-24s %5d %10.1f %9.3f %17s %8.0f%%" % (
            impl, len(used), a * 1e6, bw / 1e9, "%.3f%s" % (busbw / 1e9, pct(busbw, rate)),
            100 * worst))
    print("size     projection picks      busbw GB/s per implementation (mean of the "
          "repetitions%s)" % (", % of the link" if rate else ""))
    for nbytes in sorted(run["busbw"]):
        impls = sorted(((statistics.mean(v), i) for i, v in run["busbw"][nbytes].items()),
                       reverse=True)
        cells = ", ".join("%s %.3f%s" % (i, v / 1e9, pct(v, rate)) for v, i in impls)
        print("%-8s %-21s %s" % (size_name(nbytes), impls[0][1], cells))


def main():
    ap = pbresults.ArgumentParser(prog=PROG, description=__doc__)
    ap.add_argument("paths", nargs="+", help="bench_allreduce JSON files or folders of them")
    ap.add_argument("--rate", help="the link rate (tc form: 10gbit, 1gbit) for results that do "
                                   "not record one (tools/allreduce --cluster records it)")
    ap.add_argument("--min-floats", type=float, default=1e6,
                    help="fit sizes of at least this many floats (default 1e6: tools/cluster's "
                         "tbf passes a burst of 1 ms of the rate, at least 128 KiB, at memory "
                         "speed, so smaller messages do not see the link rate)")
    args = ap.parse_args()
    try:
        given_rate = rate_bytes(args.rate)
    except ValueError:
        ap.error("--rate: '%s' is not a rate like 10gbit, 500mbit (or none)" % args.rate)
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p)
                            if f.startswith("bench_allreduce_np") and f.endswith(".json"))
        elif os.path.isfile(p):
            files.append(p)
        else:
            ap.error("no such file or folder: %s" % p)
    groups = load_runs(files)
    if not groups:
        print("%s: no all-reduce results in %s" % (PROG, " ".join(args.paths)), file=sys.stderr)
        return 1
    print("alpha-beta fit: one all-reduce takes alpha + bytes / bw (relative least squares over "
          "the sizes of at least %s floats; alpha >= 0); busbw = 2(p-1)/p x bw"
          % size_name(4 * args.min_floats))
    for group in sorted(groups, key=pbresults.key_order):
        link, rate = group[2], given_rate
        if link:
            try:
                rate = rate_bytes(link)
            except ValueError:
                pbresults.warn(PROG, "ignoring the recorded link rate '%s'" % link)
                link = ""
        if link and args.rate and rate != given_rate:
            pbresults.warn(PROG, "--rate %s ignored for results recorded at %s" % (args.rate, link))
        for p in sorted(groups[group]):
            report(group, p, groups[group][p], link or args.rate, rate, args.min_floats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
