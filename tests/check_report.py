#!/usr/bin/env python3
"""Results people can read: tools/report keeps contexts apart (never one median over two thread
counts or two machines), shows median, min-max and CV with repetitions and flags a CV above 5%,
flags a peak_pct above 100, warns of an OpenBLAS held below the CPU's ISA, of threads above the
cores and of a machine probe that moved; --csv carries the context; every number in --html's
tables equals the one computed here from the JSON; tools/compare refuses to pair contexts;
bad input to report, sweep and compare exits 2 with one line naming the flag; tools/sweep (when
the binaries are built) writes one context per point, for bench binaries and primbench net, and
its report shows thread scaling.

Usage: check_report.py <repo root> [<build dir>]
"""
import csv
import io
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from html.parser import HTMLParser

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build")
REPORT = os.path.join(ROOT, "tools", "report")
SWEEP = os.path.join(ROOT, "tools", "sweep")
COMPARE = os.path.join(ROOT, "tools", "compare")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import expect, failures, finish  # noqa: E402


def run(cmd, env_extra=None, timeout=300):
    env = dict(os.environ)
    env.update(env_extra or {})
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------------------------------------
# Synthetic results: three contexts (A: threads 1; B: threads 2; C: like A on another CPU model).

GEMM_FLOP = {"square:1024": 2.0 * 1024 ** 3, "square:256": 2.0 * 256 ** 3}
BASE_CTX = {"host_name": "testhost", "num_cpus": 2, "cores": "2", "cpu_best_isa": "avx512",
            "cpu_isa": "avx2,avx512f,avx512bw,avx512_vnni,avx512_bf16", "openblas_core": "Haswell",
            "openblas_coretype_env": "Haswell", "onednn_isa": "avx512_core_bf16",
            "blis": "0.9.0", "blis_arch": "generic", "primbench_timing": "layer", "primbench_cache": "hot", "primbench_check": "1",
            "opencl_device": "none: no OpenCL platform", "triad_gbs": "40.0",
            "caches": [{"type": "Data", "level": 1, "size": 49152, "num_sharing": 1}]}
# (context, file) -> {(shape, impl): [times in ms, one per repetition]} and extra counters.
GEMM = {
    ("A", "gemm_t1.json"): {"cpu_model": "Test CPU X", "threads": "1", "peak_gflops": "500.0",
                            "rows": {("square:1024", "cpu/openblas"): [10.0, 10.2, 9.9],
                                     ("square:1024", "onednn/matmul"): [8.0, 9.5, 7.0],  # CV ~15%
                                     ("square:256", "cpu/openblas"): [0.2, 0.21, 0.2]},
                            "peak_pct": {("square:256", "cpu/openblas"): [146.0, 147.0, 148.5]}},
    ("B", "gemm_t2.json"): {"cpu_model": "Test CPU X", "threads": "2", "peak_gflops": "1000.0",
                            "cores": "1",  # threads above the cores
                            "rows": {("square:1024", "cpu/openblas"): [5.2, 5.1, 5.3],
                                     ("square:1024", "onednn/matmul"): [4.0, 4.1, 4.05],
                                     ("square:256", "cpu/openblas"): [0.11, 0.1, 0.105]}},
    ("C", "gemm_y.json"): {"cpu_model": "Test CPU Y", "threads": "1", "peak_gflops": "400.0",
                           "rows": {("square:1024", "cpu/openblas"): [20.0, 20.0, 20.0],
                                    ("square:1024", "onednn/matmul"): [16.0, 16.5, 15.5]}},
}
SKIPPED = ("gemm/ocl/tiled/square:256/manual_time", "unsupported: no OpenCL device (test)")
# Network rows of context A, in a second file whose probe measured 20% more (a warning).
NET = {"file": "net_t1.json", "peak_gflops": "600.0",
       "rows": {("alexnet:infer", "cpu/best"): {"ms": [50.0, 52.0, 51.0], "peak_MB": 400.0,
                                                "peak_rss_MB": 420.5, "cpu_util": 0.93,
                                                "kinds": {"conv": 30.0, "gemm": 10.0, "pool": 2.0,
                                                          "bnorm": 0.0, "act": 3.0, "other": 5.0}},
                ("alexnet:infer", "onednn/first"): {"ms": [40.0], "peak_MB": 500.0,
                                                    "kinds": {"conv": 25.0, "gemm": 8.0, "pool": 1.0,
                                                              "bnorm": 0.0, "act": 2.0, "other": 4.0}}}}
NET_BATCH = 16
LAYERS = [{"layer": "conv1", "kind": "conv", "ms": 21.5, "impls": "fwd cpu/im2col"},
          {"layer": "conv2", "kind": "conv", "ms": 8.25, "impls": "fwd cpu/winograd_f4"},
          {"layer": "fc6", "kind": "fc", "ms": 0.0375, "impls": "fwd cpu/openblas"}]
CONTEXT_FILES = {"A": ["gemm_t1.json", NET["file"]], "B": ["gemm_t2.json"], "C": ["gemm_y.json"]}


def gb_rows(name, per_rep, label):
    """Google Benchmark rows: one iteration per repetition (dicts of counters), then the mean,
    median, stddev and cv aggregates as Google Benchmark 1.7 writes them."""
    rows = []
    for i, counters in enumerate(per_rep):
        r = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": len(per_rep),
             "repetition_index": i, "threads": 1, "iterations": 3, "time_unit": "ms", "label": label}
        r.update(counters)
        rows.append(r)
    if len(per_rep) > 1:
        keys = [k for k in per_rep[0] if isinstance(per_rep[0][k], (int, float))]
        for agg, fn in (("mean", statistics.mean), ("median", statistics.median),
                        ("stddev", statistics.stdev),
                        ("cv", lambda v: statistics.stdev(v) / statistics.mean(v)
                         if statistics.mean(v) else float("nan"))):
            r = {"name": name + "_" + agg, "run_name": name, "run_type": "aggregate",
                 "repetitions": len(per_rep), "threads": 1, "aggregate_name": agg,
                 "iterations": len(per_rep), "time_unit": "ms", "label": label}
            for k in keys:
                r[k] = fn([c[k] for c in per_rep])
            rows.append(r)
    return rows


def make_results(folder):
    """Writes the synthetic result files and net_layers.jsonl into `folder`."""
    os.makedirs(folder, exist_ok=True)
    for (ctx_name, fname), spec in GEMM.items():
        ctx = dict(BASE_CTX, cpu_model=spec["cpu_model"], threads=spec["threads"],
                   peak_gflops=spec["peak_gflops"], cores=spec.get("cores", BASE_CTX["cores"]))
        benches = []
        for (shape, impl), times in spec["rows"].items():
            peaks = spec.get("peak_pct", {}).get((shape, impl))
            per_rep = []
            for i, t in enumerate(times):
                flops = GEMM_FLOP[shape] / (t / 1e3)
                per_rep.append({"real_time": t, "cpu_time": t, "FLOPS": flops, "bytes": flops / 50,
                                "peak_pct": peaks[i] if peaks else 100 * flops / 1e9 / float(spec["peak_gflops"]),
                                "err": 1e-7 * (i + 1), "unchecked": 0.0, "check_n": 100.0})
            parts = shape.split(":")
            name = "gemm/%s/%s:%s/manual_time" % (impl, parts[0], parts[1])
            benches += gb_rows(name, per_rep, "m%s" % parts[1])
        if ctx_name == "A":
            benches.append({"name": SKIPPED[0], "run_name": SKIPPED[0], "run_type": "iteration",
                            "repetitions": 3, "repetition_index": 0, "threads": 1, "iterations": 0,
                            "real_time": 0, "cpu_time": 0, "time_unit": "ms", "error_occurred": True,
                            "error_message": SKIPPED[1]})
        with open(os.path.join(folder, fname), "w") as f:
            json.dump({"context": ctx, "benchmarks": benches}, f, indent=1)
    spec = GEMM[("A", "gemm_t1.json")]
    ctx = dict(BASE_CTX, cpu_model=spec["cpu_model"], threads=spec["threads"],
               peak_gflops=NET["peak_gflops"])
    benches = []
    for (shape, impl), r in NET["rows"].items():
        network, mode = shape.split(":")
        name = "net/%s/%s/%s/iterations:3/manual_time" % (network, impl, mode)
        per_rep = [dict({"real_time": ms, "cpu_time": ms, "batch": float(NET_BATCH),
                         "images_per_s": NET_BATCH / (ms / 1e3), "ms_per_batch": ms,
                         "peak_MB": r["peak_MB"], "fallbacks": 0.0},
                        **{k: r[k] for k in ("peak_rss_MB", "cpu_util") if k in r},
                        **{"ms_" + k: v * (1 + 0.01 * i) for k, v in r["kinds"].items()})
                   for i, ms in enumerate(r["ms"])]
        benches += gb_rows(name, per_rep, "%s batch %d" % (network, NET_BATCH))
    with open(os.path.join(folder, NET["file"]), "w") as f:
        json.dump({"context": ctx, "benchmarks": benches}, f, indent=1)
    with open(os.path.join(folder, "net_layers.jsonl"), "w") as f:
        f.write(json.dumps({"name": "net/alexnet/cpu/best/infer/iterations:3/manual_time",
                            "threads": 1, "network": "alexnet", "backend": "cpu", "policy": "best",
                            "mode": "infer", "batch": NET_BATCH, "layers": LAYERS}) + "\n")


# ---------------------------------------------------------------------------------------------
# What the report must show, computed here from the same data.

def spread(vals):
    """median, min, max, cv; one measurement has no spread."""
    med = statistics.median(vals)
    if len(vals) < 2:
        return med, None, None, None
    return med, min(vals), max(vals), statistics.stdev(vals) / statistics.mean(vals)


def expected():
    """{context: {(shape, impl): {field: value}}} with the figures of every table cell."""
    out = {}
    for (c, _), spec in GEMM.items():
        rows = out.setdefault(c, {})
        by_shape = {}
        for (shape, impl), times in spec["rows"].items():
            rates = [GEMM_FLOP[shape] / (t / 1e3) * 1e-9 for t in times]
            med, lo, hi, cv = spread(rates)
            peaks = spec.get("peak_pct", {}).get((shape, impl)) or \
                [100 * r / float(spec["peak_gflops"]) for r in rates]
            rows[("gemm/" + shape, impl)] = dict(rate=med, min=lo, max=hi, cv=100 * cv,
                                                 peak_pct=statistics.median(peaks),
                                                 err=1e-7 * len(times),
                                                 time_ms=statistics.median(times))
            by_shape.setdefault("gemm/" + shape, []).append(impl)
        for shape, impls in by_shape.items():
            best = max(rows[(shape, i)]["rate"] for i in impls)
            for i in impls:
                rows[(shape, i)]["rel"] = rows[(shape, i)]["rate"] / best
                rows[(shape, i)]["max_err"] = max(rows[(shape, j)]["err"] for j in impls)
    rows = out["A"]
    for (shape, impl), r in NET["rows"].items():
        ips = [NET_BATCH / (ms / 1e3) for ms in r["ms"]]
        med, lo, hi, cv = spread(ips)
        e = dict(throughput=med, min=lo, max=hi, cv=None if cv is None else 100 * cv,
                 ms_per_batch=statistics.median(r["ms"]), peak_MB=r["peak_MB"],
                 **{k: r.get(k) for k in ("peak_rss_MB", "cpu_util")})
        for k, v in r["kinds"].items():
            e["ms_" + k] = statistics.median([v * (1 + 0.01 * i) for i in range(len(r["ms"]))])
        rows[("net/" + shape, impl)] = e
    best = max(rows[("net/alexnet:infer", i)]["throughput"] for _, i in NET["rows"])
    for _, i in NET["rows"]:
        rows[("net/alexnet:infer", i)]["rel"] = rows[("net/alexnet:infer", i)]["throughput"] / best
    return out


def tolerance(text):
    """Half a unit in the last digit shown: '128.5' -> 0.05, '1.2e-07' -> 0.05e-7."""
    m = re.match(r"^-?\d+(?:\.(\d+))?(?:e([-+]\d+))?$", text)
    decimals = len(m.group(1) or "") if m else 0
    exp = int(m.group(2) or 0) if m else 0
    return 0.5 * 10 ** (exp - decimals) * 1.0001 + 1e-12


def close(text, value):
    if value is None:
        return text == "-"
    try:
        shown = float(text)
    except ValueError:
        return False
    return abs(shown - value) <= tolerance(text)


# ---------------------------------------------------------------------------------------------
# A small DOM from html.parser: every element with its attributes, text and ancestors.

class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, dict(attrs), parent, [], ""

    def all_text(self):
        return self.text + "".join(c.all_text() for c in self.children)

    def up(self, pred):
        n = self.parent
        while n is not None and not pred(n):
            n = n.parent
        return n

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


VOID = {"meta", "br", "img", "hr", "input", "link", "area", "base", "col", "embed", "source", "wbr"}


class Dom(HTMLParser):
    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", [], None)
        self.cur = self.root
        self.errors = []
        self.feed(text)
        self.close()
        if self.cur is not self.root:
            self.errors.append("unclosed <%s>" % self.cur.tag)

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is self.root:
            self.errors.append("stray </%s>" % tag)
            return
        if n is not self.cur:
            self.errors.append("<%s> closed by </%s>" % (self.cur.tag, tag))
        self.cur = n.parent

    def handle_data(self, data):
        # Text after a child element belongs to the parent too; order does not matter here.
        self.cur.text += data


NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[-+]\d+)?$")


def check_html_numbers(path, folder):
    """Every element with data-field equals the value computed here; no numeric table cell
    goes unchecked."""
    with open(path, encoding="utf-8") as f:
        dom = Dom(f.read())
    expect(not dom.errors, "the HTML is well formed", "; ".join(dom.errors[:5]))
    exp = expected()
    contexts = {}
    for c, files in CONTEXT_FILES.items():
        contexts[" ".join(sorted(files))] = c
    ctx_facts = {}
    for c, files in CONTEXT_FILES.items():
        vals = {}
        for fname in files:
            with open(os.path.join(folder, fname)) as f:
                for k, v in json.load(f)["context"].items():
                    vals.setdefault(k, [])
                    text = v if isinstance(v, str) else json.dumps(v)
                    if text not in vals[k]:
                        vals[k].append(text)
        ctx_facts[c] = vals
    checked, seen_fields = 0, set()
    for n in dom.root.walk():
        field = n.attrs.get("data-field")
        text = n.all_text().strip().rstrip("~!").strip()
        if field is None:
            if n.tag == "td" and NUMBER.match(text) and not n.up(lambda p: p.tag == "svg"):
                failures.append("a numeric cell without data-field (unchecked): %r" % text)
            continue
        seen_fields.add(field)
        if field.startswith("ctx:"):
            key = field[4:]
            table = n.up(lambda p: p.tag == "table")
            row = n.up(lambda p: p.tag == "tr")
            col = [c for c in row.children if c.tag in ("td", "th")].index(n)
            head = [c for c in table.walk() if c.tag == "th"][col].all_text()
            c = "ABC"[int(head.split()[-1]) - 1]  # contexts in order: threads 1 (X), 2, then Y
            want = " / ".join(ctx_facts[c].get(key, []))
            if key != "caches":
                expect(text == want, "fact %s of context %s is %r (JSON: %r)" % (key, c, text, want))
            checked += 1
            continue
        section = n.up(lambda p: p.tag == "section")
        row = n.up(lambda p: p.tag == "tr" and ("data-shape" in p.attrs or "data-layer" in p.attrs))
        if field == "layer_ms":
            layer = next(l for l in LAYERS if l["layer"] == row.attrs["data-layer"])
            expect(close(text, layer["ms"]), "layer %s ms %r != %r" % (layer["layer"], text, layer["ms"]))
            checked += 1
            continue
        if row is None:
            failures.append("a data-field=%s outside a table row" % field)
            continue
        shape, impl = row.attrs.get("data-shape"), n.attrs.get("data-impl", row.attrs.get("data-impl"))
        if field in ("time_ms", "speedup", "efficiency"):
            t1, t2 = exp["A"][(shape, impl)]["time_ms"], exp["B"][(shape, impl)]["time_ms"]
            want = {"time_ms": t1, "speedup": t1 / t2, "efficiency": 100 * t1 / t2 / 2}[field]
            expect(close(text, want), "scaling %s %s %s: %r != %r" % (shape, impl, field, text, want))
            checked += 1
            continue
        if section is None:
            failures.append("a data-field=%s outside a context section" % field)
            continue
        c = contexts.get(" ".join(sorted(section.attrs.get("data-files", "").split())))
        if not expect(c is not None, "a section's files %r are one context" % section.attrs.get("data-files")):
            continue
        e = exp[c].get((shape, impl))
        if not expect(e is not None and field in e, "context %s %s %s has a %s" % (c, shape, impl, field)):
            continue
        expect(close(text, e[field]), "context %s %s %s %s: the page says %r, the JSON %r"
               % (c, shape, impl, field, text, e[field]))
        checked += 1
    for f in ("rate", "min", "max", "cv", "peak_pct", "max_err", "rel", "throughput",
              "ms_per_batch", "peak_MB", "peak_rss_MB", "cpu_util", "ms_conv", "layer_ms",
              "speedup", "efficiency"):
        expect(f in seen_fields, "the page has %s cells" % f)
    expect(checked > 40, "the page's numbers were checked (%d)" % checked)
    return dom


# ---------------------------------------------------------------------------------------------

def one_line_exit2(cmd, flag, what):
    code, out, err = run(cmd)
    lines = [l for l in err.splitlines() if l.strip()]
    expect(code == 2 and len(lines) == 1 and flag in lines[0],
           "%s: exit 2 with one line naming %s (got %d)" % (what, flag, code), out + err)


def check_synthetic(tmp):
    folder = os.path.join(tmp, "synthetic")
    make_results(folder)
    exp = expected()
    code, out, err = run([REPORT, folder])
    expect(code == 0, "tools/report on the synthetic results exits 0 (got %d)" % code, out + err)
    # Contexts apart: each context's own median, and never a median over them.
    expect("3 contexts, reported apart" in out, "three contexts are reported apart", out)
    for c in "ABC":
        want = "%.1f GFLOP/s" % exp[c][("gemm/square:1024", "onednn/matmul")]["rate"]
        expect(want in out, "context %s's median %s is shown" % (c, want), out)
    pooled = statistics.median(GEMM_FLOP["square:1024"] / (t / 1e3) * 1e-9
                               for (c, _), spec in GEMM.items() if c in "AB"
                               for t in spec["rows"][("square:1024", "onednn/matmul")])
    expect("%.1f GFLOP/s" % pooled not in out, "no median over two thread counts is shown", out)
    expect("machine=Test CPU X @ testhost, threads=1" in out and
           "machine=Test CPU Y @ testhost, threads=1" in out,
           "contexts that differ only in the CPU model are apart", out)
    # Repetitions: min-max and CV; CV above 5% flagged.
    a = exp["A"][("gemm/square:1024", "onednn/matmul")]
    expect("%.1f-%.1f" % (a["min"], a["max"]) in out, "the min-max of the repetitions is shown", out)
    expect("%.1f~" % a["cv"] in out, "a CV above 5%% is flagged (%.1f~)" % a["cv"], out)
    b = exp["B"][("gemm/square:1024", "onednn/matmul")]
    expect(re.search(r"\b%.1f\s" % b["cv"], out) and "%.1f~" % b["cv"] not in out,
           "a CV below 5% is not flagged", out)
    expect("~ noisy" in out, "the noise flag has a footnote", out)
    # peak_pct above 100: flagged, never a plain figure.
    expect("147.0!" in out and not re.search(r"147\.0(?!!)", out), "peak_pct 147 is shown as 147.0!", out)
    expect("! peak% above 100" in out, "the peak flag has a footnote", out)
    # Warnings.
    expect("OpenBLAS runs its Haswell kernels (AVX2) on a CPU with AVX-512" in out and
           "OPENBLAS_CORETYPE=Haswell" in out, "the OpenBLAS warning names the core and the variable", out)
    expect("BLIS runs its generic (reference C) kernels on a CPU with AVX-512" in out,
           "a BLIS without kernels for the CPU is warned of", out)
    expect("threads=2 is above the 1 physical cores" in out, "threads above the cores are warned of", out)
    expect("peak moved by 20%" in out, "a machine probe that moved by 20% is warned of", out)
    expect("skip[1]" in out and SKIPPED[1] in out, "a skip is shown with its reason", out)
    # Networks and layers.
    net = exp["A"][("net/alexnet:infer", "cpu/best")]
    expect("%.1f images/s" % net["throughput"] in out, "network rows show images/s", out)
    expect("conv: 1x fwd cpu/im2col, 1x fwd cpu/winograd_f4; fc: 1x fwd cpu/openblas" in out,
           "network rows show the per-layer algorithms of net_layers.jsonl", out)
    # Thread scaling between A and B (they differ only in threads).
    o = exp["A"][("gemm/square:1024", "cpu/openblas")]["time_ms"] / \
        exp["B"][("gemm/square:1024", "cpu/openblas")]["time_ms"]
    expect("Thread scaling against the 1-thread point" in out and
           "%.2fx %3.0f%%" % (o, 100 * o / 2) in out, "thread scaling shows speed-up and efficiency", out)

    # CSV: one row per context, shape and implementation, with the context's fields.
    code, out, err = run([REPORT, "--csv", folder])
    rows = list(csv.DictReader(io.StringIO(out)))
    expect(code == 0 and rows and "threads" in rows[0] and "machine" in rows[0], "--csv has context columns", out)
    for r in rows:
        c = {("Test CPU X @ testhost", "1"): "A", ("Test CPU X @ testhost", "2"): "B",
             ("Test CPU Y @ testhost", "1"): "C"}.get((r["machine"], r["threads"]))
        e = exp.get(c, {}).get((r["shape"], r["impl"]))
        if r["status"] == "skip" or e is None:
            expect(r["status"] == "skip", "CSV row %s %s %s is known" % (c, r["shape"], r["impl"]))
            continue
        key = "rate" if "rate" in e else "throughput"
        expect(math.isclose(float(r["rate"]), e[key], rel_tol=1e-5),
               "CSV rate of %s %s %s is %s (JSON %s)" % (c, r["shape"], r["impl"], r["rate"], e[key]))

    # HTML: every number in the tables equals the JSON's.
    page = os.path.join(tmp, "page", "report.html")
    os.makedirs(os.path.dirname(page))
    code, out, err = run([REPORT, "--html", "--out", page, folder], timeout=240)
    expect(code == 0 and os.path.isfile(page), "tools/report --html writes the page (got %d)" % code, out + err)
    if os.path.isfile(page):
        check_html_numbers(page, folder)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        expect("OpenBLAS runs its Haswell kernels" in text, "the page has the OpenBLAS warning")
        expect(not re.search(r"<script|<link|@import|src=\"http|url\(http", text),
               "the page loads nothing from outside (no scripts, links or remote images)")

    # Bad input: one line naming the flag, exit 2.
    one_line_exit2([REPORT, "--bogus", folder], "--bogus", "tools/report --bogus")
    one_line_exit2([REPORT, os.path.join(tmp, "nothing-here")], "nothing-here", "tools/report <missing path>")
    one_line_exit2([REPORT, "--out", page, folder], "--out", "tools/report --out without --html")
    one_line_exit2([REPORT, "--csv", "--html", folder], "--html", "tools/report --csv --html")
    one_line_exit2([SWEEP, "--threads", "1,x", "bench_gemm"], "--threads", "tools/sweep --threads 1,x")
    one_line_exit2([SWEEP, "--threads", "0", "bench_gemm"], "--threads", "tools/sweep --threads 0")
    one_line_exit2([SWEEP, "--batch", "8,-1", "bench_gemm"], "--batch", "tools/sweep --batch 8,-1")
    one_line_exit2([SWEEP, "--frobnicate", "bench_gemm"], "--frobnicate", "tools/sweep --frobnicate")
    one_line_exit2([SWEEP, "--threads", "1", os.path.join(tmp, "bench_none")], "BINARY",
                   "tools/sweep with a missing binary")
    one_line_exit2([SWEEP, "primbench", "run", "gemm"], "BINARY", "tools/sweep primbench run")

    # tools/compare: contexts are paired only when asked.
    if os.path.isfile("/usr/share/benchmark/compare.py"):
        t1, t2, y = (os.path.join(folder, f) for f in ("gemm_t1.json", "gemm_t2.json", "gemm_y.json"))
        code, out, err = run([COMPARE, "runs", t1, t2])
        expect(code == 2 and "differ in threads (1 vs. 2)" in err and len(err.strip().splitlines()) == 1,
               "tools/compare refuses two thread counts naming threads (got %d)" % code, out + err)
        code, out, err = run([COMPARE, "runs", t1, y])
        expect(code == 2 and "differ in machine" in err, "tools/compare refuses two machines (got %d)" % code,
               out + err)
        code, out, err = run([COMPARE, "--across", "threads", "runs", t1, t2])
        expect(code == 0 and "gemm/cpu/openblas/square:1024" in out,
               "tools/compare --across threads pairs them (got %d)" % code, out + err)
        one_line_exit2([COMPARE, "--across", "colour", "runs", t1, t2], "--across",
                       "tools/compare --across colour")
    else:
        print("note: /usr/share/benchmark/compare.py is absent: tools/compare not checked")


def check_sweeps(tmp):
    bench, cli = os.path.join(BUILD, "bench_gemm"), os.path.join(BUILD, "primbench")
    if not (os.access(bench, os.X_OK) and os.access(cli, os.X_OK)):
        print("note: %s or %s not built: tools/sweep runs not checked" % (bench, cli))
        return
    out_dir = os.path.join(tmp, "sweep-gemm")
    code, out, err = run([SWEEP, "--threads", "1,2", "--out", out_dir, bench,
                          "--primbench_sets=square", "--benchmark_filter=gemm/cpu/openblas/square:128/",
                          "--benchmark_min_time=0.001"], timeout=240)
    expect(code == 0, "tools/sweep over bench_gemm exits 0 (got %d)" % code, out + err)
    for t in (1, 2):
        path = os.path.join(out_dir, "bench_gemm.t%d.json" % t)
        if expect(os.path.isfile(path), "tools/sweep wrote %s" % path, err):
            with open(path) as f:
                expect(json.load(f)["context"].get("threads") == str(t), "point t%d has threads=%d" % (t, t))
    expect("[1/2]" in err and "[2/2]" in err and "left" in err, "tools/sweep shows progress on stderr", err)
    expect("2 contexts, reported apart" in out and "Thread scaling against the 1-thread point" in out,
           "the sweep's report has two contexts and thread scaling", out)
    expect(os.path.isfile(os.path.join(out_dir, "report.html")), "the sweep wrote report.html", out + err)
    out_dir = os.path.join(tmp, "sweep-net")
    code, out, err = run([SWEEP, "--threads", "1,2", "--batch", "2,4", "--out", out_dir, cli, "net",
                          "tiny_resnet", "--policy", "first", "--reps", "1", "--find-cache", "off"],
                         timeout=240)
    expect(code == 0, "tools/sweep over primbench net exits 0 (got %d)" % code, out + err)
    path = os.path.join(out_dir, "net-tiny_resnet.t2.b4.json")
    if expect(os.path.isfile(path), "tools/sweep wrote %s" % path, err):
        with open(path) as f:
            d = json.load(f)
        row = d["benchmarks"][0]
        expect(d["context"].get("threads") == "2" and d["context"].get("primbench_batch") == "4",
               "the net point's context has threads=2 and primbench_batch=4", json.dumps(d["context"])[:500])
        expect(row["name"] == "net/tiny_resnet/cpu/first/infer" and row["time_unit"] == "ms" and
               row.get("images_per_s", 0) > 0 and row.get("batch") == 4,
               "the net point is a Google Benchmark row with images_per_s", json.dumps(row)[:500])
    layers = os.path.join(out_dir, "net_layers.jsonl")
    if expect(os.path.isfile(layers), "tools/sweep wrote net_layers.jsonl"):
        with open(layers) as f:
            lines = [json.loads(l) for l in f if l.strip()]
        expect(len(lines) == 4 and all(l.get("layers") for l in lines), "one layer record per point")
    expect("4 contexts, reported apart" in out and "Throughput against batch size" in out and
           "per-layer algorithms" in out, "the net sweep's report has batch throughput and layers", out)


def main():
    with tempfile.TemporaryDirectory(prefix="pb_report_") as tmp:
        check_synthetic(tmp)
        check_sweeps(tmp)
    finish("check_report")


if __name__ == "__main__":
    main()
