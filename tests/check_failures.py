#!/usr/bin/env python3
"""Failures cannot hide: a wrong result (PRIMBENCH_INJECT_ERROR=<impl>) surfaces as FAIL through
bench_gemm (exit 1, a FAIL row in its JSON), tools/report (listed first, exit 1), tools/bench
(exit 1) and primbench net --check (exit 1); unchecked rows are marked; tools/report reports
results of different timing contracts apart and tools/compare refuses to pair them.

Usage: check_failures.py <repo root> <build dir>
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT, BUILD = sys.argv[1], sys.argv[2]
BENCH = os.path.join(BUILD, "bench_gemm")
ARGS = ["--primbench_sets=square", "--benchmark_filter=gemm/cpu/.*square:(128|256)/",
        "--benchmark_min_time=0.001"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import expect, failures, finish  # noqa: E402


def child_env(env_extra=None):
    env = dict(os.environ)
    env.pop("PRIMBENCH_INJECT_ERROR", None)
    env.update(env_extra or {})
    return env


def run(cmd, env_extra=None):
    p = subprocess.run(cmd, env=child_env(env_extra), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    return p.returncode, p.stdout


TOOLS_BENCH = [os.path.join(ROOT, "tools", "bench"), "--no-build"]


def bench_env(results, **extra):
    """tools/bench's environment: this build's binaries, results under `results`."""
    return dict(PRIMBENCH_RESULTS_DIR=results, PRIMBENCH_BUILD_DIR=BUILD, **extra)


def expect_whole_files(root, who):
    """Every file under root is whole: no temporary file, every JSON parses, every SVG and
    HTML page ends."""
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if ".tmp" in f:
                failures.append("%s left %s" % (who, p))
            elif f.endswith(".json"):
                try:
                    json.load(open(p))
                except ValueError:
                    failures.append("%s left a half-written %s" % (who, p))
            elif f.endswith((".svg", ".html")):
                if not open(p).read().rstrip().endswith(("</svg>", "</html>")):
                    failures.append("%s left a half-written %s" % (who, p))


def bench(out, *extra, inject=None):
    env = {"PRIMBENCH_INJECT_ERROR": inject} if inject else {}
    return run([BENCH] + ARGS + list(extra) +
               ["--benchmark_out=" + out, "--benchmark_out_format=json"], env)


def rows(path):
    with open(path) as f:
        return json.load(f)["benchmarks"]


tmp = tempfile.mkdtemp(prefix="pb_failures_")
good, bad, unchecked = (os.path.join(tmp, n + ".json") for n in ("good", "bad", "unchecked"))

# bench_gemm: passes cleanly, every row checked.
code, out = bench(good)
expect(code == 0, "bench_gemm without an injected error exits 0 (got %d)" % code, out)
expect(rows(good) and all(r.get("unchecked") == 0 and r.get("check_n", 0) > 0 for r in rows(good)),
       "every row of a default run is checked (unchecked=0, check_n>0)")
for r in rows(good):
    for k in ("compute_ms", "act_reorder_ms", "wei_transform_ms"):
        expect(k in r, "row %s has the phase counter %s" % (r["name"], k))
    # Measured while it ran (kernels/core/meter.h): utilisation and peak resident memory.
    for k in ("cpu_util", "peak_rss_MB"):
        expect(k in r and r[k] >= 0, "row %s has the measured counter %s" % (r["name"], k))

# bench_gemm: an injected error is a FAIL row, named on stderr, and the exit status is 1.
code, out = bench(bad, inject="cpu/openblas")
expect(code == 1, "bench_gemm with a wrong result exits 1 (got %d)" % code, out)
expect("FAIL gemm/cpu/openblas/square:128" in out, "the failed benchmark is named after the run", out)
failed = [r for r in rows(bad) if r.get("error_occurred")]
expect(failed and all(r["error_message"].startswith("FAIL: check failed") for r in failed),
       "the JSON rows of cpu/openblas say FAIL: check failed", json.dumps(failed))
expect(all("openblas" in r["name"] for r in failed), "only cpu/openblas failed")
expect(any("transpose_nn" in r["name"] and not r.get("error_occurred") for r in rows(bad)),
       "the other implementation still ran")

# --primbench_check=0: every row says unchecked.
code, out = bench(unchecked, "--primbench_check=0")
expect(code == 0 and all(r.get("unchecked") == 1 for r in rows(unchecked)),
       "with --primbench_check=0 every row is unchecked=1", out)

# tools/report: failures first, above the table, and exit 1; unchecked rows marked.
report = os.path.join(ROOT, "tools", "report")
code, out = run([report, bad])
expect(code == 1, "tools/report exits 1 when a benchmark failed (got %d)" % code, out)
expect("FAILED (" in out and out.find("FAILED (") < out.find("relative to best"),
       "tools/report lists failures before the table", out)
expect("FAIL gemm/square:128 cpu/openblas: check failed" in out, "the failure names shape and impl", out)
code, out = run([report, good])
expect(code == 0 and "FAIL" not in out, "tools/report of a clean run exits 0 with no FAIL", out)
code, out = run([report, unchecked])
expect(code == 0 and "cpu/openblas*" in out and "* unchecked" in out,
       "tools/report marks unchecked results", out)

# Different contracts are different contexts: reported apart, never paired silently.
kernel = os.path.join(tmp, "kernel.json")
code, out = bench(kernel, "--primbench_timing=kernel")
expect(code == 0, "bench_gemm --primbench_timing=kernel runs (got %d)" % code, out)
with open(kernel) as f:
    expect(json.load(f)["context"].get("primbench_timing") == "kernel",
           "the contract is recorded in the JSON context")
code, out = run([report, good, kernel])
expect(code == 0 and "2 contexts" in out and "timing=layer" in out and "timing=kernel" in out,
       "tools/report reports layer and kernel results as two contexts (got %d)" % code, out)
compare = os.path.join(ROOT, "tools", "compare")
code, out = run([compare, "runs", good, kernel])
expect(code == 2 and "differ in timing (layer vs. kernel)" in out,
       "tools/compare refuses runs of different contracts (got %d)" % code, out)
code, out = run([compare, "--across", "timing", "runs", good, kernel])
expect(code == 0 and "Comparing" in out, "tools/compare --across timing pairs them (got %d)" % code, out)

# --primbench_dt: the lines again in that type, named gemm_<type>/..., checked like any row; a
# broken reduced-precision path is a FAIL like an f32 one.


def typed_runs(code, out, path, what):
    """The names of the typed rows that ran. Rows our reduced-precision kernels cannot run on this
    CPU (bf16 without AVX512_BF16; u8s8 on cpu/direct without VNNI; every type under
    PRIMBENCH_SIMD=scalar) say why and name the ISA; there is no result for an injected error to
    spoil, and they must still not be FAILs."""
    all_rows = rows(path) if os.path.exists(path) else []
    skipped = [r for r in all_rows if r.get("error_message", "").startswith("unsupported:")]
    for r in skipped:
        expect("AVX-512" in r["error_message"] or "AVX2" in r["error_message"],
               "an unsupported typed %s row names the ISA (got %s)" % (what, r["error_message"]),
               out)
        expect("FAIL " + r["name"].replace("/manual_time", "") not in out,
               "unsupported %s row %s is not a FAIL" %
               (what, r["name"]), out)
    # (as the FAIL lines name them: without Google Benchmark's /manual_time)
    ran = [r["name"].replace("/manual_time", "") for r in all_rows if r not in skipped]
    if not ran:
        expect(code == 0, "all-unsupported typed %s rows exit 0 (got %d)" % (what, code), out)
        print("SKIP: %s has no bf16/u8s8 kernels on this CPU: no injection check" % what)
    return ran


for inject in (None, "cpu/packed"):
    typed = os.path.join(tmp, "typed.json")
    code, out = run([BENCH, "--primbench_sets=square", "--primbench_dt=bf16,u8s8:s8",
                     "--benchmark_filter=^gemm_(bf16|u8s8_s8)/cpu/packed/square:256/",
                     "--benchmark_min_time=0.01", "--benchmark_out=" + typed,
                     "--benchmark_out_format=json"],
                    {"PRIMBENCH_INJECT_ERROR": inject} if inject else {})
    names = sorted(r["name"] for r in rows(typed)) if os.path.exists(typed) else []
    expect(len(names) == 2 and names[0].startswith("gemm_bf16/cpu/packed/square:256") and
           names[1].startswith("gemm_u8s8_s8/cpu/packed/square:256"),
           "bench_gemm --primbench_dt names the rows by type (got %s)" % names, out)
    ran = typed_runs(code, out, typed, "cpu/packed GEMM")
    if not ran:
        pass
    elif inject:
        expect(code == 1 and out.count("FAIL gemm_") == len(ran) and
               all("FAIL " + n in out for n in ran),
               "an injected error in each typed GEMM that runs is a FAIL (got %d)" % code, out)
    else:
        expect(code == 0 and "FAIL" not in out, "bf16 and u8s8 rows pass (got %d)" % code, out)

# The same for the RNN's reduced types (bench_rnn --primbench_dt, forward only): named
# <cell>_fwd_<type>/..., and an injected error in either type is a FAIL.
RNN_BENCH = os.path.join(BUILD, "bench_rnn")
for inject in (None, "cpu/blas"):
    typed = os.path.join(tmp, "rnn_typed.json")
    code, out = run([RNN_BENCH, "--primbench_sets=shi_lstm", "--primbench_dt=bf16,u8s8",
                     "--primbench_dirs=fwd", "--primbench_batch=2",
                     "--benchmark_filter=^lstm_fwd_(bf16|u8s8)/cpu/blas/shi_lstm32_b64:",
                     "--benchmark_min_time=0.01", "--benchmark_out=" + typed,
                     "--benchmark_out_format=json"],
                    {"PRIMBENCH_INJECT_ERROR": inject} if inject else {})
    names = sorted(r["name"] for r in rows(typed)) if os.path.exists(typed) else []
    expect(len(names) == 2 and names[0].startswith("lstm_fwd_bf16/cpu/blas/") and
           names[1].startswith("lstm_fwd_u8s8/cpu/blas/"),
           "bench_rnn --primbench_dt names the rows by type (got %s)" % names, out)
    ran = typed_runs(code, out, typed, "cpu/blas RNN")
    if not ran:
        pass
    elif inject:
        expect(code == 1 and out.count("FAIL lstm_") == len(ran) and
               all("FAIL " + n in out for n in ran),
               "an injected error in each typed RNN that runs is a FAIL (got %d)" % code, out)
    else:
        expect(code == 0 and "FAIL" not in out, "bf16 and u8s8 RNN rows pass (got %d)" % code, out)

# The same for convolution: bench_conv --primbench_dt names rows conv_<dir>_<type>/, and an
# injected error in a bf16 or u8s8 convolution (cpu/direct; cpu/im2col) is a FAIL.
CONV = os.path.join(BUILD, "bench_conv")
for inject in (None, "cpu/direct", "cpu/im2col"):
    typed = os.path.join(tmp, "typed_conv.json")
    code, out = run([CONV, "--primbench_sets=resnet50", "--primbench_batch=1",
                     "--primbench_dirs=fwd", "--primbench_dt=bf16,u8s8:s8",
                     "--benchmark_filter=^conv_fwd_(bf16|u8s8_s8)/cpu/(direct|im2col)/"
                     "resnet50:res4_3x3_x5/", "--benchmark_min_time=0.01",
                     "--benchmark_out=" + typed, "--benchmark_out_format=json"],
                    {"PRIMBENCH_INJECT_ERROR": inject} if inject else {})
    names = sorted(r["name"] for r in rows(typed)) if os.path.exists(typed) else []
    expect(len(names) == 4 and names[0].startswith("conv_fwd_bf16/cpu/direct/resnet50:res4_3x3") and
           names[3].startswith("conv_fwd_u8s8_s8/cpu/im2col/resnet50:res4_3x3"),
           "bench_conv --primbench_dt names the rows by type (got %s)" % names, out)
    ran = typed_runs(code, out, typed, "cpu/direct and cpu/im2col convolution")
    hit = [n for n in ran if "/" + inject + "/" in n] if inject else []
    if not ran:
        pass
    elif inject:
        expect(code == (1 if hit else 0) and out.count("FAIL conv_fwd_") == len(hit) and
               all("FAIL " + n in out for n in hit),
               "an injected error in each typed %s convolution that runs is a FAIL (got %d)"
               % (inject, code), out)
    else:
        expect(code == 0 and "FAIL" not in out, "bf16 and u8s8 conv rows pass (got %d)" % code,
               out)
code, out = run([CONV, "--primbench_dt=u8s8:bf16"])
expect(code == 2 and "--primbench_dt" in out, "bench_conv --primbench_dt=u8s8:bf16 exits 2", out)

# Every benchmark flag with a wrong value: one line naming the flag, exit 2, before anything
# runs (the primitives' binaries share bench_common's flags; bench_networks has its own).
BAD_FLAGS = ("--primbench_timing=sideways", "--primbench_cache=warm", "--primbench_dt=bf8",
             "--primbench_dt=u8s8:bf16", "--primbench_sets=nope", "--primbench_dirs=up",
             "--primbench_default=maybe", "--primbench_batch=0", "--primbench_seed=-1",
             "--primbench_check=yes", "--primbench_threads=0", "--primbench_bogus=1")
for flag in BAD_FLAGS:
    code, out = bench(os.path.join(tmp, "x.json"), flag)
    expect(code == 2 and flag.split("=")[0] in out and len(out.strip().splitlines()) == 1,
           "%s exits 2 naming the flag in one line" % flag, out)
NETS = os.path.join(BUILD, "bench_networks")
for flag in ("--primbench_nets=nope", "--primbench_backends=gpu", "--primbench_policies=fastest",
             "--primbench_modes=sideways", "--primbench_default=maybe", "--primbench_batch=0",
             "--primbench_find_cache=", "--primbench_layers_dir=/proc/no/such",
             "--primbench_threads=0", "--primbench_timing=x", "--primbench_check=yes",
             "--primbench_dirs=up", "--primbench_cache=warm", "--primbench_seed=-2",
             "--primbench_bogus=1"):
    code, out = run([NETS, flag, "--benchmark_list_tests"])
    expect(code == 2 and flag.split("=")[0] in out and len(out.strip().splitlines()) == 1,
           "bench_networks %s exits 2 naming the flag in one line" % flag, out)

# tools/bench: a failed benchmark makes it exit 1 (results in a private folder).
# --no-build: ctest runs other tests beside this one, and a rebuild here (the commit recorded in
# every binary changes with each commit) would relink their binaries while they run. The
# binaries are this build's (a sanitized one under tools/test --sanitize).
code, out = run(TOOLS_BENCH + ["--benchmark_filter=gemm/cpu/openblas/square:256/"],
                bench_env(os.path.join(tmp, "results"), PRIMBENCH_INJECT_ERROR="cpu/openblas"))
expect(code == 1 and "bench_gemm failed" in out, "tools/bench exits 1 on a FAIL (got %d)" % code, out)

# tools/bench interrupted (SIGINT to its process group, as Ctrl-C sends): exit 130, no partial
# JSON left, results/latest still names the last complete run.
results = os.path.join(tmp, "results_int")
code, out = run(TOOLS_BENCH + ["--benchmark_filter=gemm/cpu/packed/square:256/"],
                bench_env(results))
expect(code == 0, "tools/bench runs one benchmark (got %d)" % code, out)
first = os.readlink(os.path.join(results, "latest")) if code == 0 else None
p = subprocess.Popen(TOOLS_BENCH + ["--primbench_sets=square", "--benchmark_filter=gemm/cpu/",
                                    "--benchmark_min_time=0.5"],
                     env=child_env(bench_env(results)), stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
log = ""
for line in p.stdout:  # interrupt once the binary runs
    log += line
    if line.startswith("=== bench_gemm"):
        time.sleep(1.5)
        os.killpg(p.pid, signal.SIGINT)
        break
log += p.communicate(timeout=120)[0]
expect(p.returncode == 130 and "bench: interrupted" in log,
       "an interrupted tools/bench exits 130 saying so (got %s)" % p.returncode, log)
expect(first is not None and os.readlink(os.path.join(results, "latest")) == first,
       "results/latest still names the last complete run after an interrupt")
expect_whole_files(results, "an interrupted tools/bench")

# tools/bench with a results folder it cannot create: one line naming the variable, exit 2.
blocker = os.path.join(tmp, "a_file")
open(blocker, "w").close()
code, out = run(TOOLS_BENCH + ["--benchmark_filter=none"],
                bench_env(os.path.join(blocker, "results")))
expect(code == 2 and "PRIMBENCH_RESULTS_DIR" in out,
       "tools/bench with an unwritable results folder exits 2 naming it (got %d)" % code, out)

# tools/bench on a full disk (a 64 KiB tmpfs, where this machine lets us mount one): whatever
# fits is whole, nothing half-written or temporary stays, and what did not fit is said in a
# line, not a traceback. Two binaries' JSON, the summary, plots and the HTML report overflow
# 64 KiB with one convolution layer (every default cpu/direct layer took 25-30 s under ASan).
full = os.path.join(tmp, "full")
os.makedirs(full)
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", full],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    try:
        code, out = run(TOOLS_BENCH +
                        ["--benchmark_filter=gemm/cpu/packed/square:256/|"
                         "conv_fwd/cpu/direct/alexnet:owt_conv3/"],
                        bench_env(os.path.join(full, "results")))
        expect("Traceback" not in out, "tools/bench on a full disk: no traceback", out)
        expect(code == 0 or "No space left on device" in out or "disk full" in out,
               "tools/bench on a full disk says why it failed (got %d)" % code, out)
        expect_whole_files(full, "tools/bench on a full disk")
    finally:
        subprocess.run(["umount", full])
else:
    print("skipped: the full-disk case (cannot mount a tmpfs here)")

# tools/allreduce: mpirun without enough slots is named, exit 1, and results/latest is not
# moved to a run without results; bad --ranks exits 2 naming it (where MPI was built).
if os.path.exists(os.path.join(BUILD, "bench_allreduce")) and shutil.which("mpirun"):
    hostfile = os.path.join(tmp, "hostfile")
    with open(hostfile, "w") as f:
        f.write("localhost slots=1\n")
    ar_results = os.path.join(tmp, "results_ar")
    allreduce = [os.path.join(ROOT, "tools", "allreduce"), "--build", BUILD]
    code, out = run(allreduce + ["--ranks", "2", "--hostfile", hostfile, "--benchmark_filter=none"],
                    {"PRIMBENCH_RESULTS_DIR": ar_results})
    expect(code == 1 and "not enough slots in " + hostfile in out and "FAILED for ranks: 2" in out,
           "tools/allreduce names the missing slots and exits 1 (got %d)" % code, out)
    expect(not os.path.lexists(os.path.join(ar_results, "latest")),
           "tools/allreduce points results/latest at a run without results")
    code, out = run(allreduce + ["--ranks", "2,x"], {"PRIMBENCH_RESULTS_DIR": ar_results})
    expect(code == 2 and "--ranks" in out, "tools/allreduce --ranks 2,x exits 2 naming it", out)

# primbench net --check: the network's reference comparison catches a wrong layer output.
cli = os.path.join(BUILD, "primbench")
net = ["net", "tiny_resnet", "--policy", "first", "--reps", "1", "--find-cache", "off", "--check"]
code, out = run([cli] + net)
expect(code == 0 and "reference composition: PASS" in out, "primbench net --check passes", out)
code, out = run([cli] + net, {"PRIMBENCH_INJECT_ERROR": "cpu/native"})
expect(code == 1 and "reference composition: FAIL" in out,
       "primbench net --check exits 1 on a wrong layer output (got %d)" % code, out)
# Training: every weight gradient is compared too; a wrong one (only the weight-gradient calls
# are hit) fails the check and is named.
code, out = run([cli] + net + ["--train"])
expect(code == 0 and "gradients PASS" in out, "primbench net --train --check passes", out)
code, out = run([cli] + net + ["--train"], {"PRIMBENCH_INJECT_ERROR": "cpu/direct:bwd_w"})
expect(code == 1 and re.search(r"gradients FAIL .*: \S+\.w FAIL", out or ""),
       "primbench net --train --check exits 1 naming a wrong weight gradient (got %d)" % code, out)

finish("check_failures")
