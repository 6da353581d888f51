#!/usr/bin/env python3
"""Smoke test of tools/plot and tools/pbplot.py on small synthetic results: every plot kind is
written as valid SVG and a non-blank PNG, the roofline carries the machine in its title and one
marker per result row (failed and skipped rows left out, the row above the peak circled), the
SVG returned for inlining is scoped, and bad input exits 2 with one line naming the argument.
usage: check_plot.py <tools/plot>     (exit 77: matplotlib is missing, the test is skipped)"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

MACHINE = "Test CPU X1"
SVG_NS = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}href"


def fail(msg):
    print("check_plot: FAIL: " + msg)
    sys.exit(1)


def ctx(**kw):
    c = {"cpu_model": MACHINE, "host_name": "testhost", "threads": "4", "peak_gflops": "100.0",
         "triad_gbs": "20.0", "primbench_timing": "layer", "primbench_cache": "hot",
         "executable": "build/bench_gemm"}
    c.update(kw)
    return c


def row(name, ms, label="", **counters):
    r = {"name": name + "/manual_time", "run_name": name + "/manual_time",
         "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
         "iterations": 10, "real_time": ms, "cpu_time": ms, "time_unit": "ms", "label": label}
    r.update(counters)
    return r


def err_row(name, msg):
    return {"name": name + "/manual_time", "run_name": name + "/manual_time",
            "run_type": "iteration", "threads": 1, "error_occurred": True,
            "error_message": msg, "iterations": 0, "real_time": 0.0, "cpu_time": 0.0,
            "time_unit": "ms"}


def gemm_rows():
    """12 good rows (3 implementations x 4 shapes, one above the peak), a skip and a FAIL."""
    rows = []
    shapes = [("s64", 64), ("s256", 256), ("s512", 512), ("t1024", 1024)]
    impls = [("cpu/openblas", 0.5, 0.0), ("cpu/tiled", 0.25, 1e-7), ("onednn/matmul", 0.6, 2e-7)]
    for shape, n in shapes:
        flop = 2.0 * n ** 3
        nbytes = 3.0 * 4 * n * n
        for impl, eff, err in impls:
            gflops = 100.0 * eff * (n / 1024.0) ** 0.3
            if shape == "t1024" and impl == "onednn/matmul":
                gflops = 120.0  # above the probe's peak
            sec = flop / (gflops * 1e9)
            rows.append(row("gemm/%s/square:%s" % (impl, shape), sec * 1e3,
                            label='m%dn%dk%dn"%s"' % (n, n, n, shape),
                            FLOPS=flop / sec, bytes=nbytes / sec, peak_pct=gflops,
                            err=err, check_n=4096.0, unchecked=0.0))
    rows.append(err_row("gemm/ocl/tiled/square:s64", "unsupported: no OpenCL device"))
    # A FAIL row that still carries rate counters must not become a point.
    rows.append(dict(err_row("gemm/ocl/tiled/square:s256", "FAIL: err 0.5 > tolerance 1e-5"),
                     FLOPS=5e10, bytes=1e9, peak_pct=50.0, err=0.5))
    return rows


NET_LAYERS = [("data", "input", 0.0, ""), ("conv1", "conv", 4.0, "fwd cpu/im2col"),
              ("relu1", "act", 0.3, "fwd cpu/native"), ("pool1", "pool", 0.5, "fwd cpu/native"),
              ("conv2", "conv", 6.0, "fwd cpu/winograd_f4"),
              ("bn2", "bnorm", 0.8, "fwd cpu/native"),
              ("fc6", "fc", 2.5, "fwd cpu/openblas"), ("loss", "loss", 0.1, "fwd cpu/native")]


def net_run(backend, policy, mode, scale, batch=16):
    layers = [{"layer": l, "kind": k, "ms": ms * scale, "share": 0, "impls": im}
              for l, k, ms, im in NET_LAYERS]
    total = sum(l["ms"] for l in layers)
    return {"network": "alexnet", "backend": backend, "policy": policy, "mode": mode,
            "batch": batch, "ms_per_batch": total * 1.05, "items_per_s": batch / total * 1e3,
            "layers": layers}


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


def make_run(d):
    write_json(os.path.join(d, "bench_gemm.json"), {"context": ctx(), "benchmarks": gemm_rows()})
    runs = [net_run("cpu", "best", "infer", 1.0), net_run("cpu", "best", "train", 3.0),
            net_run("onednn", "first", "infer", 0.7)]
    benches = []
    with open(os.path.join(d, "net_layers.jsonl"), "w", encoding="utf-8") as f:
        for r in runs:
            name = "net/alexnet/%s/%s/%s" % (r["backend"], r["policy"], r["mode"])
            kinds = {}
            for l in r["layers"]:
                k = {"fc": "gemm", "input": "other", "loss": "other"}.get(l["kind"], l["kind"])
                kinds["ms_" + k] = kinds.get("ms_" + k, 0.0) + l["ms"]
            benches.append(row(name, r["ms_per_batch"], label="alexnet batch 16",
                               ms_per_batch=r["ms_per_batch"], images_per_s=r["items_per_s"],
                               batch=16.0, **kinds))
            f.write(json.dumps(dict(r, name=name, threads=4)) + "\n")
    write_json(os.path.join(d, "bench_networks.json"),
               {"context": ctx(executable="build/bench_networks"), "benchmarks": benches})
    for p in (1, 2):
        rows = []
        for n, sz in ((100000, "100K"), (4194304, "4M"), (16777217, "16M")):
            for impl, gbs in (("mpi/native", 9.0), ("mpi/ring", 7.0)):
                t = 4.0 * n / (gbs * 1e9)
                rows.append(row("allreduce/%s/deepbench:%s/ranks:%d" % (impl, sz, p), t * 1e3,
                                label='n%dn"%s"' % (n, sz), algbw=4.0 * n / t,
                                busbw=4.0 * n / t * 2 * (p - 1) / p, latency_us=t * 1e6,
                                ranks=float(p), err=0.0))
        write_json(os.path.join(d, "bench_allreduce_np%d.json" % p),
                   {"context": ctx(executable="build/bench_allreduce", mpi_ranks=str(p)),
                    "benchmarks": rows})


def make_sweep(d):
    for t, ms in (("1", 10.0), ("2", 5.6)):
        write_json(os.path.join(d, "bench_gemm.t%s.json" % t), {
            "context": ctx(threads=t),
            "benchmarks": [row("gemm/cpu/openblas/square:1024", ms, label='m1024n1024k1024n"1024"',
                               FLOPS=2.0 * 1024 ** 3 / (ms * 1e-3),
                               bytes=12.0 * 1024 ** 2 / (ms * 1e-3), err=0.0)]})
    for b in (8, 16, 32):
        r = net_run("cpu", "best", "infer", b / 16.0 * 0.9, batch=b)
        r["context"] = ctx(threads="2", executable="build/primbench", primbench_batch=str(b))
        write_json(os.path.join(d, "net_alexnet_b%d.json" % b), r)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def check_svg(path):
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as e:
        fail("%s is not valid SVG/XML: %s" % (path, e))


def check_png(path):
    import matplotlib.image as mpimg
    import numpy
    if os.path.getsize(path) < 10000:
        fail("%s is only %d bytes" % (path, os.path.getsize(path)))
    img = mpimg.imread(path)
    if img.ndim != 3 or img.shape[0] < 200 or img.shape[1] < 300:
        fail("%s: unexpected image shape %s" % (path, img.shape))
    var = float(numpy.var(img[..., :3]))
    if var < 1e-3:
        fail("%s looks blank (pixel variance %g)" % (path, var))


def texts(root):
    return [t for el in root.iter(SVG_NS + "text") for t in el.itertext()]


def count_points(root, marker):
    """Markers inside the groups whose id contains `marker`: distinct <use> positions per group
    (a half-filled marker is drawn as two <use> at one point)."""
    n = 0
    for g in root.iter(SVG_NS + "g"):
        if marker in g.get("id", ""):
            n += len(set((u.get("x"), u.get("y")) for u in g.iter(SVG_NS + "use")))
    return n


def main():
    if len(sys.argv) != 2:
        fail("usage: check_plot.py <tools/plot>")
    plot = os.path.abspath(sys.argv[1])
    if importlib.util.find_spec("matplotlib") is None:
        print("check_plot: matplotlib is not importable by %s; skipped (tools/setup installs "
              "python3-matplotlib)" % sys.executable)
        sys.exit(77)
    cmd = [sys.executable, plot]

    with tempfile.TemporaryDirectory() as tmp:
        rundir, sweepdir = os.path.join(tmp, "run"), os.path.join(tmp, "sweep")
        os.makedirs(rundir)
        os.makedirs(sweepdir)
        make_run(rundir)
        make_sweep(sweepdir)

        # Bad input: exit 2, one line naming the argument, nothing written.
        for args, word in (([os.path.join(tmp, "missing")], "missing"),
                           ([rundir, "--only", "roofline,bogus"], "--only"),
                           ([rundir, "--format", "jpg"], "--format"),
                           ([], "RESULTS"),
                           ([rundir, "--frobnicate"], "--frobnicate")):
            rc, out, err = run(cmd + args)
            lines = [l for l in (out + err).splitlines() if l.strip()]
            if rc != 2 or len(lines) != 1 or word not in lines[0]:
                fail("%s: expected exit 2 and one line naming %s, got %d: %r"
                     % (" ".join(args) or "(no arguments)", word, rc, out + err))
        print("check_plot: bad input exits 2 with one line naming the argument")

        out1 = os.path.join(tmp, "plots1")
        rc, out, err = run(cmd + [rundir, "--out", out1])
        if rc != 0:
            fail("tools/plot %s exited %d: %s" % (rundir, rc, out + err))
        listed = set(out.split())
        expected = ["roofline", "networks", "net-alexnet", "layers-alexnet-cpu-best-infer",
                    "layers-alexnet-cpu-best-train", "layers-alexnet-onednn-first-infer",
                    "heatmap-gemm", "heatmap-networks", "error-gemm", "allreduce"]
        out2 = os.path.join(tmp, "plots2")
        rc, outs, err = run(cmd + [sweepdir, "--out", out2])
        if rc != 0:
            fail("tools/plot %s exited %d: %s" % (sweepdir, rc, outs + err))
        listed |= set(outs.split())
        expected2 = ["scaling-threads-gemm-square-1024", "scaling-batch-net-alexnet-infer",
                     "layers-alexnet-cpu-best-infer-batch8"]
        for d, names in ((out1, expected), (out2, expected2)):
            for n in names:
                for ext in ("svg", "png"):
                    p = os.path.join(d, n + "." + ext)
                    if not os.path.isfile(p):
                        fail("%s was not written (written: %s)" % (p, sorted(os.listdir(d))))
                    if p not in listed:
                        fail("%s was not printed" % p)
                    check_svg(p) if ext == "svg" else check_png(p)
        print("check_plot: %d plots written as valid SVG and non-blank PNG"
              % (len(expected) + len(expected2)))

        root = check_svg(os.path.join(out1, "roofline.svg"))
        t = texts(root)
        if not any(MACHINE in s for s in t) or not any(s.startswith("Roofline") for s in t):
            fail("the roofline's title does not name the machine %r: %r" % (MACHINE, t[:6]))
        good = sum(1 for r in gemm_rows() if not r.get("error_occurred"))
        pts = count_points(root, "-pts-")
        if pts != good:
            fail("the roofline has %d points for %d good GEMM rows" % (pts, good))
        over = count_points(root, "-overpeak")
        if over != 1:
            fail("%d points are marked above the peak, expected 1" % over)
        if count_points(root, "-ridge") != 1:
            fail("the ridge point is not marked")
        print("check_plot: the roofline names the machine and has one point per good row (%d)"
              % pts)
        root = check_svg(os.path.join(out1, "heatmap-gemm.svg"))
        t = texts(root)
        if "skip" not in t or "FAIL" not in t or t.count("1.00") != 4:
            fail("the heat map should mark a skip, a FAIL and 4 best cells: %r" % t)
        root = check_svg(os.path.join(out1, "layers-alexnet-cpu-best-infer.svg"))
        if not any("cpu/winograd_f4" in s for s in texts(root)):
            fail("the per-layer chart does not name conv2's algorithm")

        # The module API the HTML report calls.
        sys.path.insert(0, os.path.dirname(plot))
        import pbplot
        got = pbplot.plot_all([rundir], os.path.join(tmp, "api"), kinds=["roofline", "allreduce"])
        if [g["name"] for g in got] != ["roofline", "allreduce"]:
            fail("plot_all returned %r" % [g["name"] for g in got])
        ids = []
        for g in got:
            if set(g) != {"name", "title", "caption", "svg", "files"} or not g["svg"].startswith(
                    "<svg") or MACHINE not in g["title"] or len(g["files"]) != 2:
                fail("plot_all entry %r is malformed" % {k: g[k] for k in g if k != "svg"})
            if re.search(r'(href|src)="(?!#)', g["svg"]) or "@import" in g["svg"]:
                fail("%s's SVG references something outside itself" % g["name"])
            ids += re.findall(r'\sid="([^"]+)"', g["svg"])
        if len(ids) != len(set(ids)):
            fail("ids repeat between inlined SVGs: %r" % sorted(i for i in ids
                                                                if ids.count(i) > 1)[:5])
        junk = os.path.join(tmp, "junk")
        os.makedirs(junk)
        with open(os.path.join(junk, "x.json"), "w") as f:
            f.write("{not json")
        with open(os.path.join(junk, "net_layers.jsonl"), "w") as f:
            f.write("[1, 2]\n")
        if pbplot.plot_all([junk, os.path.join(tmp, "nonexistent")], os.path.join(tmp, "j")) != []:
            fail("plot_all on unplottable input should return []")
        print("check_plot: plot_all returns scoped, self-contained SVG and [] for junk")
    print("check_plot: OK")


if __name__ == "__main__":
    main()
