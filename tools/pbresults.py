"""Shared reading of primbench results (Google Benchmark JSON) for tools/report, tools/plot,
tools/sweep and tools/compare. Standard library only.

A result file has a "context" (machine, build and run facts written by the bench binaries,
see kernels/environment.cpp) and "benchmarks". Results are only ever compared or merged
within one *context key* (context_key()): the machine, the thread count, the batch, the
timing contract, the cache state, the OpenCL device and the MPI rank count. Two runs that
differ in any of these are shown side by side, never blended into one median.
"""

import argparse
import json
import os
import re
import statistics
import sys

# Suffixes Google Benchmark appends to a run name; they are not part of the shape.
_SUFFIX_RE = re.compile(r"/(manual_time|real_time|process_time|repeats:\d+|min_time:[^/]+|"
                        r"min_warmup_time:[^/]+|iterations:\d+)$")
FAIL_PREFIX = "FAIL: "

# The fields of a context key, in display order, and the context entries they come from.
# "machine" is the CPU model (PRIMBENCH_CPU_MODEL overrides it in the binaries) and the host.
KEY_FIELDS = ["machine", "threads", "batch", "timing", "cache", "device", "ranks"]


def warn(prog, msg):
    print("%s: warning: %s" % (prog, msg), file=sys.stderr)


def input_files(paths, prog="report"):
    """The .json files named by `paths` (files, or folders whose *.json are taken, sorted).
    A path that does not exist is an error (ValueError naming it)."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p)
                           if f.endswith(".json") and os.path.isfile(os.path.join(p, f)))
            if not found:
                warn(prog, "no .json files in %s" % p)
            files.extend(found)
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise ValueError("no such file or folder: %s" % p)
    return files


def load(path, prog="report"):
    """Returns (context, benchmarks) or None (with a warning) when the file is empty, unreadable
    or not Google Benchmark JSON."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        warn(prog, "cannot read %s: %s" % (path, e.strerror))
        return None
    if not text.strip():
        warn(prog, "%s is empty" % path)
        return None
    try:
        data = json.loads(text)
    except ValueError as e:
        warn(prog, "%s is not valid JSON (%s)" % (path, e))
        return None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks", []), list):
        warn(prog, "%s is not Google Benchmark output" % path)
        return None
    ctx = data.get("context") if isinstance(data.get("context"), dict) else {}
    return ctx, [b for b in data.get("benchmarks", []) if isinstance(b, dict) and "name" in b]


def strip_suffixes(name):
    while True:
        stripped = _SUFFIX_RE.sub("", name)
        if stripped == name:
            return name
        name = stripped


def split_name(name):
    """'<prim>/<backend>/<algo>/<rest>' -> ('<prim>/<rest>', '<backend>/<algo>');
    'net/<network>/<backend>/<policy>/<mode>' -> ('net/<network>:<mode>', '<backend>/<policy>')."""
    name = strip_suffixes(name)
    parts = name.split("/")
    if parts[0] == "net" and len(parts) == 5:  # net/<network>/<backend>/<policy>/<mode>
        return "net/" + parts[1] + ":" + parts[4], parts[2] + "/" + parts[3]
    if len(parts) >= 4:
        return parts[0] + "/" + "/".join(parts[3:]), parts[1] + "/" + parts[2]
    return name, "-"


def num(entry, key):
    v = entry.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def seconds(entry):
    t = num(entry, "real_time")
    if t is None:
        return None
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}.get(entry.get("time_unit", "ns"), 1e-9)
    return t * scale


def context_key(ctx):
    """The tuple (one value per KEY_FIELDS entry, "" where unknown) that results must share to
    be merged or ranked against each other."""
    machine = str(ctx.get("cpu_model", ""))
    host = str(ctx.get("host_name", ""))
    if host:
        machine = "%s @ %s" % (machine, host) if machine else host
    return (machine,
            str(ctx.get("threads", "")),
            str(ctx.get("primbench_batch", "")),
            str(ctx.get("primbench_timing", "")),
            str(ctx.get("primbench_cache", "")),
            str(ctx.get("opencl_device", "")),
            str(ctx.get("mpi_ranks", "")))


def describe_key(key, only=None):
    """'machine=..., threads=2, ...' for the fields that are set (or only those in `only`)."""
    return ", ".join("%s=%s" % (f, v) for f, v in zip(KEY_FIELDS, key)
                     if v and (only is None or f in only))


# ---------------------------------------------------------------------------------------------
# Command lines: one-line errors, as every primbench tool.


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line, '<tool>: <message>', with exit status 2."""

    def error(self, message):
        print("%s: %s (see %s --help)" % (os.path.basename(self.prog), message, self.prog),
              file=sys.stderr)
        sys.exit(2)


def positive_ints(flag, text):
    """'1,2,4' -> [1, 2, 4]; anything else is a ValueError naming the flag."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise ValueError("%s: '%s' is not a comma-separated list of positive integers "
                             "(e.g. %s 1,2,4)" % (flag, text, flag))
        out.append(int(part))
    return out


# ---------------------------------------------------------------------------------------------
# Grouping by context.


def key_without(key, *fields):
    """The key with the named fields blanked (e.g. every context of a thread sweep but threads)."""
    return tuple("" if f in fields else v for f, v in zip(KEY_FIELDS, key))


def sweep_family(key, field):
    """The key a sweep over `field` (threads, batch) shares: the key without that field, and
    for threads also without the OpenCL device's compute-unit count, which follows the thread
    count on a CPU device (PoCL: '..., 2 CU, ...')."""
    key = key_without(key, field)
    if field == "threads":
        i = KEY_FIELDS.index("device")
        key = key[:i] + (re.sub(r"\b\d+ CUs?\b", "N CU", key[i]),) + key[i + 1:]
    return key


def short_device(device):
    """'pthread-... (AuthenticAMD, 2 CU, 1024 KiB local), Portable ...' -> 'pthread-... (2 CU)'."""
    cu = re.search(r"\b\d+ CUs?\b", device)
    return device.split(" (")[0].split(", ")[0] + (" (%s)" % cu.group(0) if cu else "")


def key_field(key, field):
    return key[KEY_FIELDS.index(field)]


def differing_fields(a, b):
    """The KEY_FIELDS in which two keys differ."""
    return [f for f, x, y in zip(KEY_FIELDS, a, b) if x != y]


def natural(value):
    """Sort key that orders '2' before '16' and leaves text as text."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", str(value))]


def key_order(key):
    return [natural(v) for v in key]


def load_all(paths, prog="report"):
    """Every readable result file under `paths`: a list of dicts with path, context, benchmarks
    and key (context_key). Raises ValueError for a path that does not exist."""
    out = []
    for path in input_files(paths, prog):
        loaded = load(path, prog)
        if loaded is not None:
            ctx, benches = loaded
            out.append(dict(path=path, context=ctx, benchmarks=benches, key=context_key(ctx)))
    return out


# ---------------------------------------------------------------------------------------------
# Statistics over repetitions.


def spread(values):
    """(median, min, max, cv) of the numbers in `values`; cv (stdev / mean, as Google Benchmark's
    cv aggregate) is None with fewer than two values; all None when there are none."""
    vals = [v for v in values if v is not None]
    if not vals:
        return None, None, None, None
    med = statistics.median(vals)
    cv = None
    if len(vals) >= 2:
        mean = statistics.mean(vals)
        cv = statistics.stdev(vals) / mean if mean else None
    return med, min(vals), max(vals), cv


CV_LIMIT = 0.05      # rows noisier than this are flagged
PEAK_PCT_LIMIT = 100.0  # a peak_pct above this is flagged: the measured peak is too low


# ---------------------------------------------------------------------------------------------
# Configuration warnings: what distorts a comparison, read from the contexts.

# OpenBLAS's core names (openblas_get_corename) by the vector ISA their kernels use.
_OPENBLAS_CORE_ISA = {
    "sapphirerapids": "avx512", "cooperlake": "avx512", "skylakex": "avx512",
    "haswell": "avx2", "zen": "avx2", "excavator": "avx2",
    "sandybridge": "avx", "bulldozer": "avx", "piledriver": "avx", "steamroller": "avx",
    "nehalem": "sse", "core2": "sse", "penryn": "sse", "dunnington": "sse", "atom": "sse",
    "prescott": "sse", "barcelona": "sse", "opteron": "sse", "opteron_sse3": "sse",
    "bobcat": "sse", "nano": "sse", "katmai": "sse", "coppermine": "sse", "northwood": "sse",
    "banias": "sse", "athlon": "sse",
}
_ISA_RANK = {"sse": 1, "avx": 2, "avx2": 3, "avx512": 4}
_ISA_NAME = {"sse": "SSE", "avx": "AVX", "avx2": "AVX2", "avx512": "AVX-512"}


def isa_class(name):
    """'avx512_core_bf16', 'avx512f', 'amx_tile' -> 'avx512'; 'avx2' -> 'avx2'; ... None if unknown."""
    n = str(name or "").strip().lower()
    if n.startswith("avx512") or n.startswith("amx") or n.startswith("avx10"):
        return "avx512"
    if n.startswith("avx2"):
        return "avx2"
    if n.startswith("avx"):
        return "avx"
    if n.startswith("sse"):
        return "sse"
    return None


def best_isa(ctx):
    """The CPU's best vector ISA class from cpu_best_isa, else from the cpu_isa list."""
    best = isa_class(ctx.get("cpu_best_isa"))
    if best:
        return best
    classes = [isa_class(x) for x in str(ctx.get("cpu_isa", "")).split(",")]
    classes = [c for c in classes if c]
    return max(classes, key=_ISA_RANK.get) if classes else None


def _int(ctx, field):
    try:
        return int(str(ctx.get(field, "")).strip())
    except ValueError:
        return None


def _float(ctx, field):
    try:
        return float(str(ctx.get(field, "")).strip())
    except ValueError:
        return None


def config_warnings(results):
    """One sentence per configuration that distorts a comparison (a BLAS held below the CPU's
    ISA, threads above the physical cores, a machine probe that moved or spread), over the
    loaded result files (load_all); repeated ones are said once."""
    out = []

    def add(msg):
        if msg not in out:
            out.append(msg)

    by_key = {}
    for r in results:
        by_key.setdefault(r["key"], []).append(r)
    for key, group in sorted(by_key.items(), key=lambda kv: key_order(kv[0])):
        where = describe_key(key, only=("machine", "threads"))
        for r in group:
            ctx = r["context"]
            core = str(ctx.get("openblas_core", "")).strip()
            core_isa = _OPENBLAS_CORE_ISA.get(core.lower())
            cpu_isa = best_isa(ctx)
            if core_isa and cpu_isa and _ISA_RANK[core_isa] < _ISA_RANK[cpu_isa]:
                env = str(ctx.get("openblas_coretype_env", "")).strip()
                why = ("OPENBLAS_CORETYPE=%s in the environment holds it there: unset it" % env
                       if env else "its runtime dispatch chose them (an OpenBLAS older than the "
                       "CPU?): OPENBLAS_CORETYPE can name a better core")
                add("OpenBLAS runs its %s kernels (%s) on a CPU with %s (%s): cpu/openblas and "
                    "everything built on it are slower than this CPU allows; %s to compare BLAS "
                    "fairly" % (core, _ISA_NAME[core_isa], _ISA_NAME[cpu_isa],
                                ctx.get("cpu_model", "?"), why))
            blis_arch = str(ctx.get("blis_arch", "")).strip()
            if blis_arch == "generic" and cpu_isa in ("avx2", "avx512"):
                add("BLIS runs its generic (reference C) kernels on a CPU with %s (%s): this "
                    "BLIS build has no kernels for it, so cpu/blis is far below what BLIS does "
                    "on a supported CPU" % (_ISA_NAME[cpu_isa], ctx.get("cpu_model", "?")))
            threads, cores = _int(ctx, "threads"), _int(ctx, "cores")
            if threads and cores and threads > cores:
                add("threads=%d is above the %d physical cores (%s): SMT siblings share a core's "
                    "FMA units, so per-thread rates and scaling are not comparable with runs "
                    "within the cores" % (threads, cores, where))
            elif threads and not cores and _int(ctx, "num_cpus") and threads > _int(ctx, "num_cpus"):
                add("threads=%d is above the %d hardware threads (%s): the threads are "
                    "oversubscribed" % (threads, _int(ctx, "num_cpus"), where))
            spread_pct = _float(ctx, "peak_spread_pct")
            if spread_pct is not None and spread_pct > 10:
                add("the machine probe's passes spread by %.0f%% in %s (%s): its peak, and every "
                    "peak_pct from it, is uncertain (was the machine busy?)"
                    % (spread_pct, os.path.basename(r["path"]), where))
        # Data-parallel training (bench_networks --primbench_ranks) whose ranks x threads
        # exceeded the cores of a machine: the ranks took turns on the cores.
        for r in group:
            for b in r["benchmarks"]:
                if b.get("oversubscribed") == 1 and b.get("run_type", "iteration") == "iteration":
                    add("%s in %s: %d ranks x %d threads shared a machine's cores "
                        "(oversubscribed), so its step time and scaling efficiency are not a "
                        "scaling measurement" % (b.get("name", "?").replace("/manual_time", ""),
                                                 os.path.basename(r["path"]),
                                                 int(b.get("ranks_on_machine", 0)),
                                                 int(b.get("threads_per_rank", 0))))
        peaks = [(p, os.path.basename(r["path"])) for r in group
                 for p in [_float(r["context"], "peak_gflops")] if p]
        if len(peaks) >= 2:
            lo, hi = min(peaks), max(peaks)
            if lo[0] > 0 and hi[0] / lo[0] - 1 > 0.10:
                add("the machine probe's peak moved by %.0f%% between binaries of one run "
                    "(%s): %.1f GFLOP/s in %s, %.1f in %s; their peak_pct figures are not "
                    "comparable (was the machine busy while a probe ran?)"
                    % (100 * (hi[0] / lo[0] - 1), where, lo[0], lo[1], hi[0], hi[1]))
    return out


# ---------------------------------------------------------------------------------------------
# Per-layer sidecar of network runs: net_layers.jsonl in a results folder.

NET_LAYERS = "net_layers.jsonl"


def load_net_layers(paths, prog="report"):
    """The records of every net_layers.jsonl in the folders of `paths` (a folder, or a file's
    folder): one dict per line (name, network, backend, policy, mode, batch, layers, ...)."""
    seen, out = set(), []
    for p in paths:
        folder = p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
        f = os.path.join(folder, NET_LAYERS)
        if f in seen or not os.path.isfile(f):
            continue
        seen.add(f)
        with open(f, "r", encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    warn(prog, "%s:%d is not JSON (%s)" % (f, i, e))
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("layers"), list):
                    rec["_file"] = f
                    out.append(rec)
    return out


def match_net_layers(records, run_name, context=None, batch=None):
    """The last record for a network benchmark run `run_name` (suffixes ignored) whose threads
    and batch agree with the run's (where both say)."""
    want = strip_suffixes(str(run_name))
    threads = str((context or {}).get("threads", ""))
    found = None
    for rec in records:
        if strip_suffixes(str(rec.get("name", ""))) != want:
            continue
        if threads and "threads" in rec and str(rec["threads"]) != threads:
            continue
        if batch is not None and rec.get("batch") is not None:
            try:
                if int(float(rec["batch"])) != int(float(batch)):
                    continue
            except (TypeError, ValueError):
                pass
        found = rec
    return found


# ---------------------------------------------------------------------------------------------
# This machine.


def cpu_counts():
    """(physical cores, hardware threads) of the online CPUs, from sysfs (None where unknown)."""
    logical = os.cpu_count()
    cores = set()
    base = "/sys/devices/system/cpu"
    try:
        names = [n for n in os.listdir(base) if re.match(r"cpu\d+$", n)]
    except OSError:
        names = []
    for n in names:
        topo = os.path.join(base, n, "topology")
        try:
            with open(os.path.join(topo, "core_id")) as f:
                core = f.read().strip()
            with open(os.path.join(topo, "physical_package_id")) as f:
                pkg = f.read().strip()
        except OSError:
            continue
        online = os.path.join(base, n, "online")
        if os.path.exists(online):
            with open(online) as f:
                if f.read().strip() == "0":
                    continue
        cores.add((pkg, core))
    return (len(cores) or None), logical
