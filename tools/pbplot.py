"""Plots of primbench results (issue 17, section 4): matplotlib (Debian's python3-matplotlib,
Agg backend), written as SVG and PNG. Used by tools/plot and by tools/report --html.

    plot_all(paths, outdir) -> [dict(name, title, caption, svg, files)]

`paths` are result files or folders (Google Benchmark JSON from the bench_* binaries, `primbench
net --json` files, and net_layers*.jsonl sidecars of bench_networks); every plot is written to
`outdir` as <name>.svg and <name>.png. `svg` is the SVG text from its <svg> element on, its ids
prefixed with the plot name and its style sheet scoped to it, so several can be inlined into one
HTML page; text stays text with generic font fallbacks, and nothing outside the file is
referenced. Odd input is warned about on stderr and skipped: plot_all never raises.

Kinds (`kinds=`, tools/plot --only):
  roofline   per context: every implementation of every shape at its arithmetic intensity
             (FLOPS / bytes counters) and achieved GFLOP/s under the roof of the measured FMA peak
             (peak_gflops) and triad bandwidth (triad_gbs), one marker per <backend>/<algo>
  network    per context: throughput of every network, backend/policy and mode; per network the
             time per kind of layer (ms_* counters of bench_networks, or the layers of a sidecar /
             primbench net --json) stacked; per network run the time of every layer with the
             algorithm chosen for each convolution
  heatmap    per context, primitive and shape set: each implementation's speed relative to the
             best per shape (at most 20 shapes per page), skipped and failed cells marked
  error      per context and primitive: relative speed against the numerical error (err)
  scaling    from sweeps (contexts differing only in threads, or in batch): time per call or
             mini-batch and speed-up against threads; items/s against batch
  allreduce  per context: bus bandwidth (busbw) and latency against message size, per
             implementation and rank count (the nccl-tests view)

Results are only put on one set of points within one context key (pbresults.context_key); plots
that compare contexts (scaling, all-reduce over rank counts) label each series with its context.
"""

import io
import json
import math
import os
import re
import statistics
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pbresults as R  # noqa: E402

KINDS = ["roofline", "network", "heatmap", "error", "scaling", "allreduce"]
FORMATS = ["svg", "png"]
HEATMAP_ROWS = 20       # shapes per heat-map page
MAX_LAYER_BARS = 60     # bars in a per-layer chart (the rest grouped by kind)
MAX_SWEEP_PLOTS = 40    # scaling plots per sweep (the rest are named in a warning)
PNG_DPI = 150

# Marker shapes by algorithm (the part after the backend), fill by backend: the same algorithm
# keeps its shape on every backend and plot, and nothing depends on colour alone.
# The algorithms primbench has get fixed shapes, distinct where they share a plot; others take
# the next unused one.
_ALGO_MARKER = {"direct": "o", "im2col": "s", "winograd_f2": "^", "winograd_f4": "v",
                "winograd": "<", "fft": "*", "implicit_gemm": "P", "auto": "D", "openblas": "X",
                "blas": ">", "transpose_nn": "d", "matmul": "p", "clblast": "h",
                "clblast_default": "1", "tiled": "x", "native": "o", "ring": "s", "rdouble": "^",
                "nchw": "o", "channels_last": "s", "best": "o", "first": "s", "composed": "^"}
_MARKERS = ["o", "s", "^", "v", "D", "*", "P", "X", "<", ">", "d", "p", "h", "H", "8", "x", "1",
            "2", "3", "4", "+"]
_BACKEND_FILL = {"cpu": "full", "ocl": "none", "onednn": "left", "mpi": "full", "torch": "top",
                 "ref": "bottom"}
_FILLS = ["full", "none", "left", "top", "bottom", "right"]
_LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3))]
# Okabe-Ito, a palette that stays distinct for colour-blind readers; shapes carry the meaning.
_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
            "#999999"]
# Layer kinds of the stacked network bars: (counter suffix, label, face colour, hatch).
_LAYER_KINDS = [("conv", "convolution", "#3b3b3b", ""),
                ("gemm", "GEMM (fully connected)", "#8c8c8c", "///"),
                ("rnn", "RNN/LSTM/GRU", "#d9d9d9", "xx"),
                ("pool", "pooling", "#ffffff", "..."),
                ("bnorm", "batch-norm", "#bdbdbd", "\\\\\\"),
                ("act", "activation", "#f0f0f0", "---"),
                ("other", "other (input, add, loss)", "#ffffff", "")]
_KIND_OF_LAYER = {"conv": "conv", "fc": "gemm", "gemm": "gemm", "rnn": "rnn", "lstm": "rnn",
                  "gru": "rnn", "pool": "pool", "bnorm": "bnorm", "act": "act"}

_RC = {
    "font.family": ["DejaVu Sans", "sans-serif"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "legend.title_fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.color": "#d0d0d0",
    "grid.linestyle": ":",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "hatch.linewidth": 0.6,
    "svg.fonttype": "none",      # text stays text (font lists end with a generic family)
    "figure.dpi": 100,
}


def _warn(prog, msg):
    R.warn(prog, msg)


# ----------------------------------------------------------------------------------------------
# Reading results
# ----------------------------------------------------------------------------------------------

class Entry:
    """One benchmark (name) in one context key: its rows (median aggregates when there are any,
    else the iterations) and status."""

    def __init__(self, key, name, batch):
        self.key, self.name, self.batch = key, name, batch
        self.shape, self.impl = R.split_name(name)
        self.prim = self.shape.split("/", 1)[0]
        rest = self.shape.split("/", 1)[1] if "/" in self.shape else self.shape
        self.set = rest.split(":", 1)[0] if ":" in rest else ""
        self.short = rest
        self.iters, self.medians, self.ctxs, self.files = [], [], [], []
        self.skips, self.fails = [], []
        self.label = ""
        self.unchecked = False

    @property
    def rows(self):
        return self.medians or self.iters

    @property
    def ok(self):
        return bool(self.rows) and not self.fails

    @property
    def status(self):
        if self.fails:
            return "fail"
        return "ok" if self.rows else "skip"

    def value(self, counter):
        vals = [v for v in (R.num(r, counter) for r in self.rows) if v is not None]
        return statistics.median(vals) if vals else None

    def err(self):
        errs = [v for v in (R.num(r, "err") for r in self.iters + self.medians) if v is not None]
        return max(errs) if errs else None

    def seconds(self):
        vals = [v for v in (R.seconds(r) for r in self.rows) if v is not None and v > 0]
        return statistics.median(vals) if vals else None

    def ctx_float(self, field):
        vals = []
        for c in self.ctxs:
            try:
                vals.append(float(c.get(field)))
            except (TypeError, ValueError):
                pass
        return vals


class Data:
    def __init__(self):
        self.entries = {}     # (key, name, batch) -> Entry, in first-seen order
        self.layer_runs = []  # dicts: network, backend, policy, mode, batch, layers, key, source
        self.folder_ctx = {}  # folder -> [ctx] of the Google Benchmark files read there


def _read_json(path, prog):
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return None  # pbresults.load says why


def _is_net_json(d):
    return (isinstance(d, dict) and "benchmarks" not in d and isinstance(d.get("layers"), list)
            and isinstance(d.get("network"), str))


def _batch_str(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return ""
    return str(int(f)) if f == int(f) else str(f)


def _add_layer_run(data, d, ctx, source):
    try:
        run = {"network": str(d["network"]), "backend": str(d.get("backend", "")),
               "policy": str(d.get("policy", "")), "mode": str(d.get("mode", "")),
               "batch": _batch_str(d.get("batch")), "source": source,
               "ms_per_batch": R.num(d, "ms_per_batch"),
               "layers": [l for l in d["layers"] if isinstance(l, dict)]}
    except (KeyError, TypeError):
        return
    ctx = dict(ctx or {})
    if d.get("threads") not in (None, ""):
        ctx["threads"] = str(d["threads"])
    run["key"] = R.context_key(ctx)
    run["ctx"] = ctx
    # The same run appended again (repetitions) replaces the earlier line.
    ident = (run["key"], run["network"], run["backend"], run["policy"], run["mode"], run["batch"])
    data.layer_runs = [r for r in data.layer_runs if (r["key"], r["network"], r["backend"],
                                                       r["policy"], r["mode"], r["batch"]) != ident]
    data.layer_runs.append(run)


def _add_bench(data, path, ctx, b):
    run_type = b.get("run_type", "iteration")
    if run_type == "aggregate" and b.get("aggregate_name") != "median":
        return
    name = R.strip_suffixes(str(b.get("run_name") if run_type == "aggregate" and b.get("run_name")
                                else b["name"]))
    key = R.context_key(ctx)
    batch = _batch_str(b.get("batch")) if R.num(b, "batch") is not None else ""
    ident = (key, name, batch)
    e = data.entries.get(ident)
    if e is None:
        e = data.entries[ident] = Entry(key, name, batch)
    if path not in e.files:
        e.files.append(path)
        e.ctxs.append(ctx)
    if b.get("label"):
        e.label = str(b["label"])
    if R.num(b, "unchecked"):
        e.unchecked = True
    if b.get("error_occurred"):
        msg = str(b.get("error_message") or "error (no message)")
        (e.fails if msg.startswith(R.FAIL_PREFIX) else e.skips).append(msg)
    elif run_type == "aggregate":
        e.medians.append(b)
    else:
        e.iters.append(b)


def _net_json_rows(d):
    """A primbench net --json object as one Google Benchmark-like row."""
    name = "net/%s/%s/%s/%s" % (d.get("network"), d.get("backend"), d.get("policy"),
                                d.get("mode"))
    row = {"name": name, "run_type": "iteration", "label": "%s batch %s" % (
        d.get("network"), _batch_str(d.get("batch")))}
    ms = R.num(d, "ms_per_batch")
    if ms is not None:
        row["real_time"], row["time_unit"], row["ms_per_batch"] = ms, "ms", ms
    for k in ("items_per_s", "batch", "peak_MB", "fallbacks"):
        if R.num(d, k) is not None:
            row[k] = R.num(d, k)
    # The per-kind split, as bench_networks' ms_* counters.
    kinds = {}
    for l in d.get("layers", []):
        if isinstance(l, dict) and R.num(l, "ms") is not None:
            k = _KIND_OF_LAYER.get(str(l.get("kind", "")), "other")
            kinds[k] = kinds.get(k, 0.0) + R.num(l, "ms")
    for k, v in kinds.items():
        row["ms_" + k] = v
    return row


def collect(paths, prog="plot"):
    data = Data()
    json_files, jsonl_files = [], []
    for p in paths:
        p = str(p)
        if os.path.isdir(p):
            try:
                json_files.extend(R.input_files([p], prog))
                jsonl_files.extend(sorted(os.path.join(p, f) for f in os.listdir(p)
                                          if f.endswith(".jsonl")
                                          and os.path.isfile(os.path.join(p, f))))
            except (OSError, ValueError) as e:
                _warn(prog, str(e))
        elif os.path.isfile(p):
            (jsonl_files if p.endswith(".jsonl") else json_files).append(p)
        else:
            _warn(prog, "no such file or folder: %s" % p)
    for path in json_files:
        d = _read_json(path, prog)
        if _is_net_json(d):
            ctx = d.get("context") if isinstance(d.get("context"), dict) else {}
            _add_layer_run(data, d, ctx, path)
            _add_bench(data, path, ctx, _net_json_rows(d))
            continue
        loaded = R.load(path, prog)
        if loaded is None:
            continue
        ctx, benches = loaded
        data.folder_ctx.setdefault(os.path.dirname(os.path.abspath(path)), []).append(ctx)
        for b in benches:
            try:
                _add_bench(data, path, ctx, b)
            except Exception as e:  # an odd row: skip it, keep the rest
                _warn(prog, "%s: skipping row %r (%s)" % (path, b.get("name"), e))
    for path in jsonl_files:
        folder = os.path.dirname(os.path.abspath(path))
        ctxs = data.folder_ctx.get(folder, [])
        try:
            with open(path, "r", encoding="utf-8") as f:
                lines = f.readlines()
        except OSError as e:
            _warn(prog, "cannot read %s: %s" % (path, e.strerror))
            continue
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except ValueError:
                _warn(prog, "%s:%d is not valid JSON; skipped" % (path, i + 1))
                continue
            if not _is_net_json(d):
                _warn(prog, "%s:%d has no network layers; skipped" % (path, i + 1))
                continue
            # The context of the bench_networks file beside it with the same thread count.
            ctx = next((c for c in ctxs if str(c.get("threads", "")) == str(d.get("threads", ""))
                        and "bench_networks" in str(c.get("executable", ""))), None)
            if ctx is None:
                ctx = next((c for c in ctxs if "bench_networks" in str(c.get("executable", ""))),
                           None)
            if ctx is None:
                ctx = next((c for c in ctxs if str(c.get("threads", "")) ==
                            str(d.get("threads", ""))), ctxs[0] if ctxs else {})
            ctx = dict(d["context"]) if isinstance(d.get("context"), dict) else dict(ctx)
            _add_layer_run(data, d, ctx, path)
    return data


# ----------------------------------------------------------------------------------------------
# Naming, titles, contexts
# ----------------------------------------------------------------------------------------------

def slug(s, limit=48):
    s = re.sub(r"[^A-Za-z0-9_]+", "-", str(s)).strip("-").lower()
    return s[:limit].strip("-") or "x"


def _short_device(dev):
    dev = str(dev)
    first = dev.split(",")[0].strip()
    return first if len(first) <= 44 else first[:42] + "..."


def _short_key(key):
    k = list(key)
    k[R.KEY_FIELDS.index("device")] = _short_device(k[R.KEY_FIELDS.index("device")]) if k[
        R.KEY_FIELDS.index("device")] else ""
    return tuple(k)


_NAME_PRIORITY = ["threads", "batch", "machine", "timing", "cache", "ranks", "device"]


def _value_slug(field, value, values):
    if not value:
        return "none"
    if field in ("threads", "batch", "ranks"):
        return field + slug(value, 12)
    others = [v for v in values if v and v != value]
    common = os.path.commonprefix([value] + others) if others else ""
    return slug(value[len(common):] or value, 24)


def context_names(keys):
    """key -> file-name suffix ('' when there is one context; else '-' and the fewest differing
    fields that tell the contexts apart, threads and batch first)."""
    keys = list(dict.fromkeys(keys))
    if len(keys) <= 1:
        return {k: "" for k in keys}
    differ = [f for f in _NAME_PRIORITY
              if len(set(k[R.KEY_FIELDS.index(f)] for k in keys)) > 1]
    use = differ
    for n in range(1, len(differ) + 1):
        idx = [R.KEY_FIELDS.index(f) for f in differ[:n]]
        if len(set(tuple(k[i] for i in idx) for k in keys)) == len(keys):
            use = differ[:n]
            break
    names, used = {}, set()
    for n, k in enumerate(keys):
        parts = []
        for f in use:
            i = R.KEY_FIELDS.index(f)
            parts.append(_value_slug(f, k[i], [x[i] for x in keys]))
        s = "-".join(parts) or "ctx%d" % (n + 1)
        while s in used:
            s += "-%d" % (n + 1)
        used.add(s)
        names[k] = "-" + s
    return names


def _machine(key):
    return R.key_field(key, "machine") or "unknown machine"


def title_of(subject, key, drop=()):
    """Two-line title: the subject, then the machine and the context fields that are set."""
    sk = _short_key(key)
    rest = R.describe_key(sk, only=[f for f in R.KEY_FIELDS if f != "machine" and f not in drop])
    line2 = _machine(key) + (" | " + rest if rest else "")
    return subject + "\n" + "\n".join(textwrap.wrap(line2, 110))


def _caption_ctx(key, drop=()):
    d = R.describe_key(key, only=[f for f in R.KEY_FIELDS if f not in drop])
    return "Context: %s." % (d or "not recorded")


def _fmt(v, digits=3):
    if v is None:
        return "-"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 100:
        return "%.0f" % v
    return ("%." + str(digits) + "g") % v


def _descriptor(label):
    """The problem descriptor of a label ('m4096n64k9216n"fc6"' -> 'm4096n64k9216')."""
    return re.sub(r'n?"[^"]*"$', "", str(label)).rstrip("_")


# ----------------------------------------------------------------------------------------------
# Styles
# ----------------------------------------------------------------------------------------------

class Styles:
    """Marker shape per algorithm, fill and colour per backend, stable across the plots of one
    call (the same algorithm keeps its shape, the same backend its fill and colour)."""

    BACKEND_COLOUR = {"cpu": "#0072B2", "onednn": "#D55E00", "ocl": "#009E73", "mpi": "#CC79A7",
                      "torch": "#000000", "ref": "#999999"}

    def __init__(self):
        self.algo_marker = {}
        self.backend_fill = dict(_BACKEND_FILL)
        self.backend_colour = dict(self.BACKEND_COLOUR)

    def marker(self, impl, colour=None):
        backend, _, algo = impl.partition("/")
        algo = algo or backend
        if algo not in self.algo_marker:
            used = set(self.algo_marker.values()) | set(_ALGO_MARKER.values())
            free = [m for m in _MARKERS if m not in used] or _MARKERS
            self.algo_marker[algo] = _ALGO_MARKER.get(algo) or free[0]
        if backend not in self.backend_fill:
            used = set(self.backend_fill.values())
            free = [f for f in _FILLS if f not in used] or _FILLS
            self.backend_fill[backend] = free[0]
        if backend not in self.backend_colour:
            used = set(self.backend_colour.values())
            free = [c for c in _COLOURS if c not in used] or _COLOURS
            self.backend_colour[backend] = free[0]
        colour = colour or self.backend_colour[backend]
        m = self.algo_marker[algo]
        return dict(marker=m, fillstyle=self.backend_fill[backend], color=colour,
                    markerfacecoloralt="white", markeredgecolor=colour,
                    markeredgewidth=1.6 if m in ("x", "+", "1", "2", "3", "4") else 1.1)


def _line_colours(impls):
    """A colour per implementation for line plots (markers and line styles carry it too)."""
    return {i: _COLOURS[n % len(_COLOURS)] for n, i in enumerate(_impl_order(impls))}


def _impl_order(impls):
    order = {"cpu": 0, "onednn": 1, "ocl": 2, "mpi": 3, "torch": 4, "ref": 5}
    return sorted(set(impls), key=lambda i: (order.get(i.split("/")[0], 9), i))


# ----------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------

_ID_RE = re.compile(r'(?<![\w:-])id="([^"]+)"')


def scope_svg(text, name):
    """SVG text from <svg> on, every id prefixed with `name` (references rewritten), the root
    given id `name` and the style sheet limited to it: several plots inline into one page."""
    start = text.find("<svg")
    text = text[start:] if start >= 0 else text
    pre = slug(name, 80)
    ids = set(_ID_RE.findall(text))
    text = _ID_RE.sub(lambda m: 'id="%s-%s"' % (pre, m.group(1)), text)
    for i in sorted(ids, key=len, reverse=True):
        text = text.replace("url(#%s)" % i, "url(#%s-%s)" % (pre, i))
        text = text.replace('xlink:href="#%s"' % i, 'xlink:href="#%s-%s"' % (pre, i))
        text = text.replace('href="#%s"' % i, 'href="#%s-%s"' % (pre, i))
    text = text.replace("<svg ", '<svg id="svg-%s" ' % pre, 1)
    text = re.sub(r"<style type=\"text/css\">\s*\*\s*\{",
                  '<style type="text/css">#svg-%s *{' % pre, text, count=1)
    return text


class Writer:
    def __init__(self, outdir, formats, prog):
        self.outdir, self.formats, self.prog = outdir, formats, prog
        self.results = []
        self.names = set()

    def save(self, fig, name, title, caption):
        import matplotlib
        name = slug(name, 120)
        base = name
        n = 2
        while name in self.names:
            name = "%s-%d" % (base, n)
            n += 1
        self.names.add(name)
        files = []
        with matplotlib.rc_context({"svg.hashsalt": name}):
            buf = io.BytesIO()
            fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.08,
                        metadata={"Title": title.replace("\n", " - "), "Date": None,
                                  "Description": caption})
        svg = scope_svg(buf.getvalue().decode("utf-8"), name)
        os.makedirs(self.outdir, exist_ok=True)
        if "svg" in self.formats:
            path = os.path.join(self.outdir, name + ".svg")
            _write_whole(path, lambda f: f.write(
                ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg).encode("utf-8")))
            files.append(path)
        if "png" in self.formats:
            path = os.path.join(self.outdir, name + ".png")
            _write_whole(path, lambda f: fig.savefig(
                f, format="png", dpi=PNG_DPI, bbox_inches="tight", pad_inches=0.08,
                metadata={"Title": title.replace("\n", " - ")}))
            files.append(path)
        self.results.append(dict(name=name, title=title.replace("\n", " - "), caption=caption,
                                 svg=svg, files=files))


def _write_whole(path, write):
    """Writes a file whole or not at all (a temporary file, then a rename): on a full disk no
    half-written plot stays behind."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _figure(w, h):
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = Figure(figsize=(w, h))
    FigureCanvasAgg(fig)
    return fig


def _suptitle(fig, ax, title, gap_in=0.12):
    """A figure title starting at the left edge of `ax` (for figures of several axes), `gap_in`
    inches above its top."""
    pos = ax.get_position()
    fig.suptitle(title, x=pos.x0, y=pos.y1 + gap_in / fig.get_figheight(), ha="left",
                 va="bottom", fontsize=10)


def _legend_outside(ax, title=None, ncol=1, handles=None, labels=None):
    kw = dict(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False,
              title=title, ncol=ncol, handlelength=2.2)
    if handles is not None:
        return ax.legend(handles, labels, **kw)
    return ax.legend(**kw)


def _log_ticks(axis):
    """Plain numbers on a log axis (no 9x10^0), with 1-2-5 ticks when it spans few decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    lo, hi = axis.get_view_interval()
    if lo <= 0 or hi <= 0:
        return
    span = math.log10(hi / lo)
    if span <= 2.2:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if span > 0.9 else
                                          (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _p: "%g" % float("%.3g" % v)))
    axis.set_minor_formatter(NullFormatter())


def _bytes_fmt(v, _pos=None):
    for unit, s in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if v >= unit:
            return "%g %s" % (v / unit, s)
    return "%g B" % v


# ----------------------------------------------------------------------------------------------
# 1. Roofline
# ----------------------------------------------------------------------------------------------

def plot_roofline(data, w, styles):
    """One roofline per context with every result, and one per binary (gemm, conv, rnn, ...)
    where several binaries contributed."""
    by_key = {}
    for e in data.entries.values():
        if e.ok and (e.value("FLOPS") or 0) > 0 and (e.value("bytes") or 0) > 0:
            by_key.setdefault(e.key, []).append(e)
    names = context_names(by_key)
    for key, entries in by_key.items():
        _try(w, "roofline" + names[key], lambda: _roofline_one(
            w, key, entries, "roofline" + names[key], styles, None))
        groups = {}
        for e in entries:
            groups.setdefault(group_of(e), []).append(e)
        if len(groups) > 1:
            for grp, es in groups.items():
                nm = "roofline-%s%s" % (grp, names[key])
                _try(w, nm, lambda: _roofline_one(w, key, es, nm, styles, grp))


def _roofline_one(w, key, entries, name, styles, grp):
    from matplotlib.ticker import LogLocator
    # The probe of every file that contributed a point.
    files = {}
    for e in entries:
        for f, c in zip(e.files, e.ctxs):
            files[f] = c
    peaks = [float(c["peak_gflops"]) for c in files.values() if _isnum(c.get("peak_gflops"))]
    bws = [float(c["triad_gbs"]) for c in files.values() if _isnum(c.get("triad_gbs"))]
    peaks = [p for p in peaks if p > 0]
    bws = [b for b in bws if b > 0]
    P = statistics.median(peaks) if peaks else None
    B = statistics.median(bws) if bws else None

    fig = _figure(10.5, 6.2)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ai = [e.value("FLOPS") / e.value("bytes") for e in entries]
    gf = [e.value("FLOPS") / 1e9 for e in entries]
    xlo, xhi = min(ai) / 2.5, max(ai) * 2.5
    ylo, yhi = min(gf) / 2.5, max(gf) * 2.5
    ridge = P / B if P and B else None
    if ridge:
        xlo, xhi = min(xlo, ridge / 4), max(xhi, ridge * 4)
        yhi = max(yhi, P * 2.2)
        ylo = min(ylo, B * xlo * 1.2)
    ax.set_xlim(xlo, xhi)
    ax.set_ylim(ylo, yhi)

    notes = []
    if ridge:
        xs = [xlo * (xhi / xlo) ** (i / 400.0) for i in range(401)]
        ax.plot(xs, [min(P, B * x) for x in xs], color="black", lw=2.0, zorder=3, gid="roof",
                label="roof: min(peak, triad x intensity)")
        if len(peaks) > 1 and (max(peaks) > 1.1 * min(peaks) or max(bws) > 1.1 * min(bws)):
            ax.fill_between(xs, [min(min(peaks), min(bws) * x) for x in xs],
                            [min(max(peaks), max(bws) * x) for x in xs], color="#cccccc",
                            alpha=0.6, lw=0, zorder=2,
                            label="probe range over %d binaries" % len(files))
            notes.append("The probe moved between binaries (peak %s-%s GFLOP/s, triad %s-%s GB/s);"
                         " the roof uses the medians, the grey band the range."
                         % (_fmt(min(peaks)), _fmt(max(peaks)), _fmt(min(bws)), _fmt(max(bws))))
        ax.plot([ridge], [P], ls="none", marker="D", ms=8, mfc="white", mec="black", mew=1.6,
                zorder=6, gid="ridge", label="ridge point: %s FLOP/byte" % _fmt(ridge))
        ax.axvline(ridge, color="black", lw=0.8, ls=(0, (2, 3)), zorder=2)
        ax.text(ridge * 1.12, P * 1.06, "FMA peak %s GFLOP/s" % _fmt(P), ha="left",
                va="bottom", fontsize=8)
        # The bandwidth label along the slope, rotated to it on the page.
        xt = max(xlo * 1.6, ridge / 60.0)
        if xt < ridge / 1.5:
            fig.canvas.draw()
            p0 = ax.transData.transform((xt, B * xt))
            p1 = ax.transData.transform((xt * 2, B * xt * 2))
            ang = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
            ax.text(xt, B * xt * 1.25, "triad %s GB/s" % _fmt(B), rotation=ang,
                    rotation_mode="anchor", ha="left", va="bottom", fontsize=8)
    else:
        notes.append("The context has no machine probe (peak_gflops, triad_gbs): no roof drawn.")

    by_impl = {}
    for e, x, y in zip(entries, ai, gf):
        by_impl.setdefault(e.impl, []).append((x, y, e))
    over = []
    for impl in _impl_order(by_impl):
        pts = by_impl[impl]
        st = styles.marker(impl)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], ls="none", ms=6.5, alpha=0.9,
                zorder=5, gid="pts-" + slug(impl), label="%s (%d)" % (impl, len(pts)), **st)
        for x, y, e in pts:
            pct = e.value("peak_pct")
            if (pct is not None and pct > 100) or (pct is None and P and y > P):
                over.append((x, y))
    if over:
        ax.plot([p[0] for p in over], [p[1] for p in over], ls="none", marker="o", ms=13,
                mfc="none", mec="#C00000", mew=1.4, zorder=4, gid="overpeak",
                label="above the measured peak (%d)" % len(over))
        notes.append("%d point(s) exceed the measured peak (peak_pct > 100, circled): FLOPs are the"
                     " problem's nominal (direct-method) count, so Winograd and FFT can beat the"
                     " roof, and a probe that ran under load reads low." % len(over))
    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.set_xlabel("arithmetic intensity (FLOP/byte): FLOPS counter / bytes counter")
    ax.set_ylabel("achieved GFLOP/s (nominal FLOPs per second)")
    title = title_of("Roofline%s: %d results of %d implementations" % (
        " of " + grp if grp else "", len(entries), len(by_impl)), key)
    ax.set_title(title, loc="left")
    _legend_outside(ax, title="implementation (points)\nshape: algorithm, fill: backend")
    caption = ("Roofline on %s. Each point is one implementation on one shape: x its arithmetic "
               "intensity (the FLOPs and the bytes that must move, as the benchmark counts them), "
               "y its achieved rate. The roof is the measured FMA peak (%s GFLOP/s) and, left of "
               "the ridge at %s FLOP/byte, the triad bandwidth (%s GB/s) times the intensity: a "
               "point below the slanted part is limited by memory bandwidth, below the flat part "
               "by compute; the vertical gap to the roof is what is left. Failed and skipped rows "
               "are left out. %s %s" % (_machine(key), _fmt(P), _fmt(ridge), _fmt(B),
                                         " ".join(notes), _caption_ctx(key)))
    w.save(fig, name, title, caption)


def _isnum(v):
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


# ----------------------------------------------------------------------------------------------
# 2. Networks
# ----------------------------------------------------------------------------------------------

def _net_parts(e):
    """(network, mode) of a net row ('net/<network>:<mode>')."""
    rest = e.shape.split("/", 1)[1] if "/" in e.shape else e.shape
    net, _, mode = rest.partition(":")
    return net, mode


def _throughput(e):
    for c in ("images_per_s", "samples_per_s", "items_per_s"):
        v = e.value(c)
        if v is not None and v > 0:
            return v, {"images_per_s": "images/s", "samples_per_s": "samples/s"}.get(c, "items/s")
    s = e.seconds()
    try:
        b = float(e.batch or R.key_field(e.key, "batch"))
    except ValueError:
        b = None
    if s and b:
        return b / s, "items/s"
    return None, None


def plot_networks(data, w, styles):
    nets = [e for e in data.entries.values() if e.prim == "net"]
    by_key = {}
    for e in nets:
        by_key.setdefault(e.key, []).append(e)
    names = context_names(by_key)
    for key, entries in by_key.items():
        _try(w, "networks" + names[key], lambda: _net_overview(w, key, entries, names[key]))
        per_net = {}
        for e in entries:
            per_net.setdefault(_net_parts(e)[0], []).append(e)
        for net, es in per_net.items():
            _try(w, "net-%s%s" % (net, names[key]),
                 lambda: _net_stacked(w, key, net, es, names[key], data))
    # Per-layer charts: sidecars and primbench net --json.
    runs_by_key = {}
    for r in data.layer_runs:
        runs_by_key.setdefault(r["key"], []).append(r)
    lnames = context_names(runs_by_key)
    for key, runs in runs_by_key.items():
        for r in runs:
            nm = "layers-%s-%s-%s-%s%s" % (r["network"], r["backend"], r["policy"], r["mode"],
                                           lnames[key])
            if len(set(x["batch"] for x in runs if x["network"] == r["network"])) > 1:
                nm += "-batch" + r["batch"]
            _try(w, nm, lambda: _net_layers(w, key, r, nm))


def _net_overview(w, key, entries, suffix):
    rows = []
    for e in entries:
        v, unit = _throughput(e)
        if v is None:
            continue
        net, mode = _net_parts(e)
        rows.append((net, mode, e.impl, v, unit, e))
    if not rows:
        return
    groups = list(dict.fromkeys((r[0], r[1]) for r in rows))
    fig = _figure(9.5, 0.9 + sum(0.28 * sum(1 for r in rows if (r[0], r[1]) == g) + 0.45
                               for g in groups))
    ax = fig.add_subplot(1, 1, 1)
    y, yt, yl = 0.0, [], []
    hatches = ["", "///", "...", "xx", "\\\\\\", "--", "oo", "++"]
    impls = _impl_order(r[2] for r in rows)
    impl_h = {i: hatches[n % len(hatches)] for n, i in enumerate(impls)}
    shades = ["#4d4d4d", "#a6a6a6", "#ffffff", "#d9d9d9", "#7f7f7f", "#f2f2f2"]
    impl_c = {i: shades[n % len(shades)] for n, i in enumerate(impls)}
    group_mid = []
    seen = set()
    xmax = max(r[3] for r in rows)
    for g in groups:
        grp = sorted([r for r in rows if (r[0], r[1]) == g], key=lambda r: impls.index(r[2]))
        start = y
        for r in grp:
            lab = r[2] if r[2] not in seen else None
            seen.add(r[2])
            ax.barh(y, r[3], height=0.8, color=impl_c[r[2]], hatch=impl_h[r[2]],
                    edgecolor="black", lw=0.6, label=lab, gid="bar-" + slug(r[0] + r[1] + r[2]))
            extra = ""
            if r[5].batch:
                extra = ", batch " + r[5].batch
            ax.text(r[3] + xmax * 0.01, y, "%s %s%s" % (_fmt(r[3]), r[4], extra), va="center",
                    fontsize=7)
            yt.append(y)
            yl.append(r[2])
            y += 1
        group_mid.append(((start + y - 1) / 2.0, "%s\n%s" % g))
        y += 0.6
    ax.set_yticks(yt)
    ax.set_yticklabels(yl, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, xmax * 1.3)
    for mid, text in group_mid:
        ax.text(-0.16, mid, text, transform=ax.get_yaxis_transform(), ha="right", va="center",
                fontsize=8, fontweight="bold")
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("throughput (images/s; samples/s for FCN and LSTM: higher is better)")
    title = title_of("Networks: throughput per backend/policy and mode", key)
    ax.set_title(title, loc="left")
    _legend_outside(ax, title="backend/policy")
    caption = ("Throughput of each network (mode: infer = inference, train = one SGD step) per "
               "backend and policy, from bench_networks (and primbench net --json, tools/peer). "
               + _caption_ctx(key))
    w.save(fig, "networks" + suffix, title, caption)


def _kind_split(e, data):
    """{kind: ms} from the ms_* counters, else from the per-layer data of the same run."""
    out = {}
    counters = set()
    for r in e.rows:
        counters.update(k for k in r if k.startswith("ms_") and k != "ms_per_batch")
    for c in counters:
        v = e.value(c)
        if v is not None:
            out[c[3:]] = v
    if out:
        return out, "counters"
    net, mode = _net_parts(e)
    backend, _, policy = e.impl.partition("/")
    for r in data.layer_runs:
        if (r["network"], r["backend"], r["policy"], r["mode"]) == (net, backend, policy, mode) \
                and R.key_without(r["key"], "device") == R.key_without(e.key, "device"):
            for l in r["layers"]:
                if R.num(l, "ms") is not None:
                    k = _KIND_OF_LAYER.get(str(l.get("kind", "")), "other")
                    out[k] = out.get(k, 0.0) + R.num(l, "ms")
            return out, "layers"
    return None, None


def _net_stacked(w, key, net, entries, suffix, data):
    rows = []
    for e in entries:
        split, src = _kind_split(e, data)
        if split and sum(split.values()) > 0:
            rows.append((e, split))
    if not rows:
        return  # old results: no per-kind counters, no layers: no stacked plot
    modes = list(dict.fromkeys(_net_parts(e)[1] for e, _ in rows))
    kinds = [k for k in _LAYER_KINDS if any(s.get(k[0]) for _, s in rows)]
    known = set(k[0] for k in _LAYER_KINDS)
    extra = sorted(set(k for _, s in rows for k in s if k not in known and s[k]))
    kinds += [(k, k, "#ffffff", "oo") for k in extra]
    n_per_mode = [sum(1 for e, _ in rows if _net_parts(e)[1] == m) for m in modes]
    fig = _figure(10, 1.2 + sum(0.42 * n + 0.7 for n in n_per_mode))
    axes = fig.subplots(len(modes), 1, squeeze=False,
                        gridspec_kw={"height_ratios": [n + 0.8 for n in n_per_mode]})[:, 0]
    for ax, mode in zip(axes, modes):
        mrows = sorted([(e, s) for e, s in rows if _net_parts(e)[1] == mode],
                       key=lambda r: _impl_order([x[0].impl for x in rows]).index(r[0].impl))
        labels = []
        tot_max = 0.0
        for i, (e, s) in enumerate(mrows):
            left = 0.0
            total = sum(s.values())
            for k, lab, colour, hatch in kinds:
                v = s.get(k, 0.0)
                if v <= 0:
                    continue
                ax.barh(i, v, left=left, height=0.62, color=colour, hatch=hatch,
                        edgecolor="black", lw=0.6, label=lab if i == 0 or lab not in
                        ax.get_legend_handles_labels()[1] else None,
                        gid="seg-%s-%s" % (slug(e.impl), k))
                if v / total > 0.09:
                    dark = colour in ("#3b3b3b", "#8c8c8c")
                    ax.text(left + v / 2, i, "%.0f%%" % (100 * v / total), ha="center",
                            va="center", fontsize=7, color="white" if dark else "black",
                            bbox=None if dark else dict(boxstyle="round,pad=0.1", fc="white",
                                                        ec="none", alpha=0.8))
                left += v
            measured = e.value("ms_per_batch") or (e.seconds() or 0) * 1e3
            ax.text(max(left, measured) * 1.01 + 0.0, i, "  sum %s ms%s" % (
                _fmt(left), ", measured %s ms" % _fmt(measured) if measured else ""),
                va="center", fontsize=7)
            if measured:  # white-edged, to show on dark segments too
                ax.plot([measured], [i], marker="|", ms=19, mew=5, color="white", ls="none")
                ax.plot([measured], [i], marker="|", ms=17, mew=2.2, color="black", ls="none",
                        label="measured step (ms_per_batch)" if i == 0 else None)
            tot_max = max(tot_max, left, measured)
            labels.append(e.impl + (" (batch %s)" % e.batch if e.batch else ""))
        ax.set_yticks(range(len(mrows)))
        ax.set_yticklabels(labels)
        ax.invert_yaxis()
        ax.set_xlim(0, tot_max * 1.4)
        ax.grid(axis="y", visible=False)
        ax.set_ylabel({"infer": "inference", "train": "training step"}.get(mode, mode))
    axes[-1].set_xlabel("time per mini-batch (ms), split by kind of layer")
    fig.subplots_adjust(hspace=0.35)
    found = {}
    for ax in axes:
        for h, l in zip(*ax.get_legend_handles_labels()):
            found.setdefault(l, h)
    labs = [k[1] for k in kinds if k[1] in found] + [l for l in found
                                                     if l not in [k[1] for k in kinds]]
    handles = [found[l] for l in labs]
    _legend_outside(axes[0], title="kind of layer", handles=handles, labels=labs)
    title = title_of("%s: time per mini-batch by kind of layer" % net, key)
    axes[0].set_title(title, loc="left")
    caption = ("Time per mini-batch of %s for each backend/policy and mode, split by kind of layer"
               " (the layers as timed in the breakdown step: ms_* counters of bench_networks, or "
               "the per-layer report); the bar marks the measured step (ms_per_batch), so the "
               "gap to the stacked sum is composition overhead. %s" % (net, _caption_ctx(key)))
    w.save(fig, "net-%s%s" % (net, suffix), title, caption)


def _net_layers(w, key, run, name):
    layers = [l for l in run["layers"] if R.num(l, "ms") is not None
              and str(l.get("kind", "")) != "input"]
    if not layers:
        return
    total = sum(R.num(l, "ms") for l in layers)
    keep = layers
    grouped = []
    if len(layers) > MAX_LAYER_BARS:
        must = [l for l in layers if _KIND_OF_LAYER.get(str(l.get("kind"))) in ("conv", "gemm",
                                                                                 "rnn")]
        room = MAX_LAYER_BARS - 6 - len(must)
        rest = sorted([l for l in layers if l not in must], key=lambda l: -R.num(l, "ms"))
        chosen = set(id(l) for l in must[:MAX_LAYER_BARS - 6] + rest[:max(room, 0)])
        keep = [l for l in layers if id(l) in chosen]
        left = [l for l in layers if id(l) not in chosen]
        by = {}
        for l in left:
            k = _KIND_OF_LAYER.get(str(l.get("kind")), "other")
            by.setdefault(k, []).append(l)
        for k, ls in by.items():
            lab = {k[0]: k[1] for k in _LAYER_KINDS}.get(k, k).split(" (")[0]
            grouped.append({"layer": "%d %s layers together" % (len(ls), lab),
                            "kind": ls[0]["kind"],
                            "ms": sum(R.num(l, "ms") for l in ls), "impls": "", "_group": True})
    bars = keep + grouped
    style = {k[0]: k for k in _LAYER_KINDS}
    fig = _figure(10, 1.4 + 0.2 * len(bars))
    ax = fig.add_subplot(1, 1, 1)
    xmax = max(R.num(l, "ms") for l in bars) or 1.0
    seen = set()
    n_conv = 0
    for i, l in enumerate(bars):
        k = _KIND_OF_LAYER.get(str(l.get("kind")), "other")
        _, lab, colour, hatch = style[k]
        ms = R.num(l, "ms")
        ax.barh(i, ms, height=0.72, color=colour, hatch=hatch, edgecolor="black", lw=0.5,
                label=lab if lab not in seen else None, gid="layer-%d" % i)
        seen.add(lab)
        note = ""
        if k == "conv" and l.get("impls"):
            note = _impls_short(str(l["impls"]))
            n_conv += 1
        elif k in ("gemm", "rnn") and l.get("impls"):
            note = _impls_short(str(l["impls"]))
        share = ms / total * 100 if total else 0
        ax.text(ms + xmax * 0.01, i, "%s ms  %.1f%%%s" % (_fmt(ms), share,
                                                         ("   " + note) if note else ""),
                va="center", fontsize=6.5, fontweight="bold" if k == "conv" else "normal")
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([str(l.get("layer")) for l in bars], fontsize=7)
    ax.invert_yaxis()
    ax.set_ylim(len(bars) - 0.4, -0.6)
    ax.set_xlim(0, xmax * 1.75)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("time per mini-batch (ms)")
    found = dict(zip(*reversed(ax.get_legend_handles_labels())))
    order = [k[1] for k in _LAYER_KINDS if k[1] in found]
    mode = {"infer": "inference", "train": "training step"}.get(run["mode"], run["mode"])
    subj = "%s %s, %s/%s, batch %s: time per layer, the algorithm of each convolution" % (
        run["network"], mode, run["backend"], run["policy"], run["batch"] or "?")
    title = title_of(subj, key)
    ax.set_title(title, loc="left")
    _legend_outside(ax, title="kind of layer", handles=[found[l] for l in order], labels=order)
    caption = ("Time of every layer of %s (%s) on backend %s with policy %s, in network order, "
               "with each convolution's chosen implementations (fwd; in training also bwd_d, "
               "bwd_w). Sum of layers %s ms%s. From %s. %s" % (
                   run["network"], mode, run["backend"], run["policy"], _fmt(total),
                   "; measured step %s ms" % _fmt(run["ms_per_batch"]) if run["ms_per_batch"]
                   else "", os.path.basename(run["source"]), _caption_ctx(key)))
    w.save(fig, name, title, caption)


def _impls_short(s):
    return s.replace(", ", " | ")


# ----------------------------------------------------------------------------------------------
# 3. Heat maps and speed against error
# ----------------------------------------------------------------------------------------------

def _metric(oks):
    """The one rate of a shape's implementations: FLOPS, else bytes, else 1/time."""
    if oks and all((e.value("FLOPS") or 0) > 0 for e in oks):
        return (lambda e: e.value("FLOPS")), "GFLOP/s", 1e-9
    if oks and all((e.value("bytes") or 0) > 0 for e in oks):
        return (lambda e: e.value("bytes")), "GB/s", 1e-9
    return (lambda e: 1.0 / e.seconds() if e.seconds() else 0.0), "calls/s", 1.0


def _relative(entries):
    """shape -> ({impl: relative speed}, best entry, unit, best rate)."""
    shapes = {}
    for e in entries:
        shapes.setdefault(e.shape, []).append(e)
    out = {}
    for shape, es in shapes.items():
        oks = [e for e in es if e.ok]
        speed, unit, scale = _metric(oks)
        sp = {e.impl: speed(e) or 0.0 for e in oks}
        best = max(sp.values()) if sp else 0.0
        rel = {i: (v / best if best > 0 else None) for i, v in sp.items()}
        best_e = max(oks, key=speed) if oks else None
        out[shape] = (rel, best_e, unit, best * scale if best_e else None, es)
    return out


def group_of(e):
    """The binary a result came from ('conv' for build/bench_conv), 'networks' for network rows,
    else the primitive: heat maps and error plots are drawn per group."""
    if e.prim == "net":
        return "networks"
    for c in e.ctxs:
        exe = os.path.basename(str(c.get("executable", "")))
        if exe:
            return exe[6:] if exe.startswith("bench_") and len(exe) > 6 else exe
    return e.prim


def _suffixes(groups):
    """{(base, key): suffix}: a context suffix only where one base has several contexts."""
    out = {}
    by_base = {}
    for base, key in groups:
        by_base.setdefault(base, []).append(key)
    for base, keys in by_base.items():
        names = context_names(keys)
        for k in keys:
            out[(base, k)] = names[k]
    return out


def _pages(entries):
    """Rows (shapes) in pages of at most HEATMAP_ROWS: a primitive stays on one page when it
    fits, else its sets do, else a set is cut into pages."""
    prims = {}
    for e in entries:
        prims.setdefault(e.prim, {}).setdefault(e.set, [])
        if e.shape not in prims[e.prim][e.set]:
            prims[e.prim][e.set].append(e.shape)
    units = []
    for prim, sets in prims.items():
        shapes = [s for ss in sets.values() for s in ss]
        if len(shapes) <= HEATMAP_ROWS:
            units.append(shapes)
            continue
        for ss in sets.values():
            units.extend(ss[i:i + HEATMAP_ROWS] for i in range(0, len(ss), HEATMAP_ROWS))
    pages, cur = [], []
    for u in units:
        if cur and len(cur) + len(u) > HEATMAP_ROWS:
            pages.append(cur)
            cur = []
        cur = cur + u
    if cur:
        pages.append(cur)
    return pages


def plot_heatmaps(data, w, styles):
    groups = {}
    for e in data.entries.values():
        groups.setdefault((group_of(e), e.key), []).append(e)
    suffix = _suffixes(groups)
    for (grp, key), entries in groups.items():
        if len(set(e.impl for e in entries)) < 2:
            continue
        base = "heatmap-%s%s" % (grp, suffix[(grp, key)])
        _try(w, base, lambda: _heatmap(w, key, grp, entries, base))


def _heatmap(w, key, grp, entries, base):
    import matplotlib
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle
    rel = _relative(entries)
    pages = _pages(entries)
    impls = _impl_order(e.impl for e in entries)
    allv = [v for s in rel for v in rel[s][0].values() if v]
    vmin = min(max(min(allv + [1.0]), 1e-3), 0.1)
    norm = LogNorm(vmin=vmin, vmax=1.0)
    cmap = matplotlib.colormaps["viridis"]
    for pn, page in enumerate(pages):
        nrow, ncol = len(page), len(impls)
        prims = list(dict.fromkeys(rel[s][4][0].prim for s in page))
        fig = _figure(3.4 + 0.72 * ncol + 1.0, 2.3 + 0.34 * nrow)
        ax = fig.add_subplot(1, 1, 1)
        ax.grid(False)
        for r, shape in enumerate(page):
            rv, best_e, unit, best_rate, es = rel[shape]
            by = {e.impl: e for e in es}
            for c, impl in enumerate(impls):
                e = by.get(impl)
                if e is None:
                    ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fc="white", ec="#dddddd",
                                           lw=0.5))
                    ax.text(c, r, "-", ha="center", va="center", fontsize=7, color="#888888")
                elif e.status == "fail":
                    ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fc="white", ec="black",
                                           hatch="xxx", lw=0.8, gid="cell-fail"))
                    ax.text(c, r, "FAIL", ha="center", va="center", fontsize=7,
                            fontweight="bold", bbox=dict(fc="white", ec="black", pad=1))
                elif e.status == "skip":
                    ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fc="#f4f4f4", ec="#bbbbbb",
                                           hatch="///", lw=0.5, gid="cell-skip"))
                    ax.text(c, r, "skip", ha="center", va="center", fontsize=6.5,
                            color="#444444", bbox=dict(fc="#f4f4f4", ec="none", pad=0.5))
                else:
                    v = rv.get(impl)
                    colour = cmap(norm(max(v or vmin, vmin)))
                    lum = 0.299 * colour[0] + 0.587 * colour[1] + 0.114 * colour[2]
                    ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fc=colour, ec="white",
                                           lw=1.0, gid="cell-ok"))
                    txt = "%.2f" % v if v is not None and v >= 0.01 else ("<0.01" if v else "-")
                    if e.unchecked:
                        txt += "*"
                    ax.text(c, r, txt, ha="center", va="center", fontsize=7.5,
                            fontweight="bold" if v == 1.0 else "normal",
                            color="white" if lum < 0.5 else "black")
            if best_e is not None:
                ax.text(ncol - 0.5 + 0.12, r, "%s %s" % (_fmt(best_rate), unit), ha="left",
                        va="center", fontsize=7)
        # Lines between primitives.
        for r in range(1, nrow):
            if rel[page[r]][4][0].prim != rel[page[r - 1]][4][0].prim:
                ax.axhline(r - 0.5, color="black", lw=1.4)
        ax.set_xlim(-0.5, ncol - 0.5)
        ax.set_ylim(nrow - 0.5, -0.5)
        ax.set_xticks(range(ncol))
        ax.set_xticklabels(impls)
        ax.tick_params(axis="x", top=False, bottom=False, labeltop=True, labelbottom=False,
                       length=0)
        ax.tick_params(axis="y", length=0)
        for lab in ax.get_xticklabels():
            lab.set_rotation(40)
            lab.set_ha("left")
            lab.set_rotation_mode("anchor")
        ylabels = []
        for s in page:
            es = rel[s][4]
            lab = next((e.label for e in es if e.label), "")
            short = es[0].short if len(prims) == 1 else "%s %s" % (es[0].prim, es[0].short)
            d = _descriptor(lab)
            ylabels.append(short if not d or d in short or es[0].prim == "net"
                           else "%s  %s" % (short, d[:34]))
        ax.set_yticks(range(nrow))
        ax.set_yticklabels(ylabels, fontsize=7)
        for sp in ax.spines.values():
            sp.set_visible(False)
        cb = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, orientation="horizontal",
                          pad=0.03, fraction=0.9 / (2.3 + 0.34 * nrow) * 0.35, shrink=0.6,
                          aspect=40)
        cb.set_label("speed relative to the best for the shape (log colour scale; 1 = best)",
                     fontsize=8)
        ticks = [t for t in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
                 if t >= vmin * 0.999]
        cb.set_ticks(ticks)
        cb.set_ticklabels(["%g" % t for t in ticks])
        cb.ax.minorticks_off()
        what = "%s (%s)" % (grp, ", ".join(prims)) if prims != [grp] else grp
        if grp == "networks":
            what = "networks"
        pg = ", page %d of %d" % (pn + 1, len(pages)) if len(pages) > 1 else ""
        title = title_of("%s: speed relative to the best per shape%s" % (what, pg), key)
        longest = max(len(i) for i in impls)
        ax.set_title(title, loc="left", pad=8 + 4.2 * longest)
        caption = ("Each cell is an implementation's rate on the shape (row) divided by the best "
                   "rate on that shape (1.00, bold, is the best; the best absolute rate is at the "
                   "right; the rate is GFLOP/s where every implementation counts FLOPs, else GB/s,"
                   " else calls per second). 'skip': not supported for the shape; 'FAIL': a failed"
                   " check or an error; '-': not run; '*': unchecked. %s" % _caption_ctx(key))
        w.save(fig, base + ("-p%d" % (pn + 1) if len(pages) > 1 else ""), title, caption)


def plot_error(data, w, styles):
    groups = {}
    for e in data.entries.values():
        if e.prim not in ("net", "allreduce"):
            groups.setdefault((group_of(e), e.key), []).append(e)
    suffix = _suffixes(groups)
    for (grp, key), entries in groups.items():
        prims = {}
        for e in entries:
            prims.setdefault(e.prim, []).append(e)
        keep = {}
        for prim, es in prims.items():
            oks = [e for e in es if e.ok and e.err() is not None]
            if len(set(e.impl for e in oks)) >= 2 and any(e.err() > 0 for e in oks):
                keep[prim] = es
        if keep:
            nm = "error-%s%s" % (grp, suffix[(grp, key)])
            _try(w, nm, lambda: _error_one(w, key, grp, keep, nm, styles))


def _error_one(w, key, grp, prims, name, styles):
    n = len(prims)
    ncol = min(3, n)
    nrow = (n + ncol - 1) // ncol
    fig = _figure(1.2 + 3.9 * ncol + 2.2, 1.0 + 3.0 * nrow)
    axes = fig.subplots(nrow, ncol, squeeze=False)
    handles = {}
    n_zero_all = 0
    for idx, (prim, entries) in enumerate(prims.items()):
        ax = axes[idx // ncol][idx % ncol]
        rel = _relative(entries)
        pts = {}
        for shape, (rv, _, _, _, es) in rel.items():
            for e in es:
                if e.ok and e.err() is not None and rv.get(e.impl) is not None:
                    pts.setdefault(e.impl, []).append((e.err(), rv[e.impl]))
        pos = [x for p in pts.values() for x, _ in p if x > 0]
        floor = min(pos) / 8.0 if pos else 1e-12
        ax.set_xscale("log")
        n_zero = 0
        for impl in _impl_order(pts):
            p = pts[impl]
            xs = [x if x > 0 else floor for x, _ in p]
            n_zero += sum(1 for x, _ in p if x <= 0)
            h, = ax.plot(xs, [y for _, y in p], ls="none", ms=6, alpha=0.9,
                         gid="pts-%s-%s" % (slug(prim), slug(impl)), label=impl,
                         **styles.marker(impl))
            handles.setdefault(impl, h)
        if n_zero:
            n_zero_all += n_zero
            ax.axvline(floor, color="black", lw=0.8, ls=(0, (2, 3)))
            ax.text(floor, 0.02, "err = 0 ", rotation=90, va="bottom", ha="right", fontsize=7,
                    transform=ax.get_xaxis_transform())
        ax.set_xlim(floor / 3, max(pos + [floor]) * 3)
        ax.set_ylim(0, 1.08)
        ax.set_title(prim, fontsize=9, loc="left")
        if idx % ncol == 0:
            ax.set_ylabel("speed relative to the best")
        if idx // ncol == nrow - 1 or idx + ncol >= n:
            ax.set_xlabel("error vs fp64 reference (err, log)")
    for idx in range(n, nrow * ncol):
        axes[idx // ncol][idx % ncol].set_visible(False)
    impls = _impl_order(handles)
    axes[0][ncol - 1].legend([handles[i] for i in impls], impls, loc="upper left",
                             bbox_to_anchor=(1.03, 1.0), frameon=False, title="implementation")
    title = title_of("%s: speed against numerical error, every shape" % grp, key)
    fig.subplots_adjust(hspace=0.45, wspace=0.28, top=1.0 - 0.35 / (1.0 + 3.0 * nrow))
    _suptitle(fig, axes[0][0], title, gap_in=0.32)
    caption = ("Each point is one implementation on one shape: x its normwise error against the "
               "fp64 reference (err counter, the largest over repetitions), y its rate relative to"
               " the best implementation of that shape (1 = fastest). Up and left is better: fast"
               " and accurate. %s%s" % ("Exact results (err = 0) sit on the dashed line. "
                                        if n_zero_all else "", _caption_ctx(key)))
    w.save(fig, name, title, caption)


# ----------------------------------------------------------------------------------------------
# 4. Sweeps: threads and batch
# ----------------------------------------------------------------------------------------------

def plot_scaling(data, w, styles):
    _sweep(data, w, styles, "threads")
    _sweep(data, w, styles, "batch")


def _sweep_value(e, field):
    v = R.key_field(e.key, field)
    if field == "batch" and not v:
        v = e.batch
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _sweep(data, w, styles, field):
    groups = {}
    for e in data.entries.values():
        if not e.ok:
            continue
        x = _sweep_value(e, field)
        if x is None:
            continue
        gkey = R.sweep_family(e.key, field)
        groups.setdefault(gkey, {}).setdefault(e.shape, {}).setdefault(e.impl, {})[x] = e
    plots = []
    for gkey, shapes in groups.items():
        for shape, impls in shapes.items():
            impls = {i: pts for i, pts in impls.items() if len(pts) >= 2}
            if impls:
                plots.append((gkey, shape, impls))
    if not plots:
        return
    names = context_names(set(p[0] for p in plots))
    if len(plots) > MAX_SWEEP_PLOTS:
        _warn(w.prog, "%d %s-sweep plots; only the first %d are drawn" % (
            len(plots), field, MAX_SWEEP_PLOTS))
        plots = plots[:MAX_SWEEP_PLOTS]
    for gkey, shape, impls in plots:
        nm = "scaling-%s-%s%s" % (field, slug(shape.replace("/", "-").replace(":", "-"), 60),
                                  names[gkey])
        _try(w, nm, lambda: _sweep_one(w, gkey, shape, impls, field, nm, styles))


def _time_ms(e):
    v = e.value("ms_per_batch")
    if v:
        return v, "time per mini-batch (ms)"
    s = e.seconds()
    return (s * 1e3 if s else None), "time per call (ms)"


def _sweep_one(w, gkey, shape, impls, field, name, styles):
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter
    fig = _figure(11, 4.4)
    ax1, ax2 = fig.subplots(1, 2)
    xs_all = sorted(set(x for pts in impls.values() for x in pts))
    ylab1 = None
    notes = []
    colours = _line_colours(impls)
    for n, impl in enumerate(_impl_order(impls)):
        pts = impls[impl]
        xs = sorted(pts)
        st = styles.marker(impl, colours[impl])
        ls = _LINESTYLES[n % len(_LINESTYLES)]
        lab = "%s" % impl
        if field == "threads":
            ts = [_time_ms(pts[x]) for x in xs]
            ylab1 = ts[0][1]
            ys = [t[0] for t in ts]
            ax1.plot(xs, ys, ls=ls, ms=6.5, lw=1.3, label=lab, gid="sweep-" + slug(impl), **st)
            base_x = xs[0]
            base = ys[0]
            sp = [base / y if y else None for y in ys]
            ax2.plot(xs, sp, ls=ls, ms=6.5, lw=1.3, label=lab, **st)
            if len(impls) <= 4:
                for x, v in zip(xs[1:], sp[1:]):
                    if v:
                        ax2.annotate("%.2fx (%.0f%%)" % (v, 100.0 * v / (x / base_x)), (x, v),
                                     textcoords="offset points", xytext=(-6, -10), ha="right",
                                     va="top",
                                     fontsize=7, color=st["color"])
            if base_x != 1:
                notes.append("%s: speed-up against %g threads (no 1-thread point)" % (impl, base_x))
        else:
            tp = [_throughput(pts[x]) for x in xs]
            unit = next((t[1] for t in tp if t[1]), "items/s")
            ylab1 = "throughput (%s)" % unit
            ax1.plot(xs, [t[0] for t in tp], ls=ls, ms=6.5, lw=1.3, label=lab,
                     gid="sweep-" + slug(impl), **st)
            ts = [_time_ms(pts[x]) for x in xs]
            ax2.plot(xs, [t[0] for t in ts], ls=ls, ms=6.5, lw=1.3, label=lab, **st)
            ylab2 = ts[0][1]
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(xs_all))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_xlabel("threads" if field == "threads" else "batch size (mini-batch)")
    if field == "threads":
        ax1.set_yscale("log")
        _log_ticks(ax1.yaxis)
        ax1.set_ylabel(ylab1)
        lo, hi = xs_all[0], xs_all[-1]
        ax2.plot([lo, hi], [1, hi / lo], color="black", lw=0.9, ls=(0, (3, 3)),
                 label="ideal (linear)")
        ax2.set_ylabel("speed-up against the fewest threads (x)")
        ax2.set_ylim(bottom=0)
        subj = "Thread scaling: %s" % shape
        cap = ("Left: time per %s against the number of threads (log-log); right: speed-up "
               "against the 1-thread point (or the fewest threads run), with ideal linear "
               "scaling dashed. Every point is a separate context that differs only in threads. "
               % ("mini-batch" if "mini-batch" in (ylab1 or "") else "call"))
    else:
        ax1.set_ylabel(ylab1)
        ax1.set_ylim(bottom=0)
        ax2.set_yscale("log")
        _log_ticks(ax2.yaxis)
        ax2.set_ylabel(ylab2)
        subj = "Batch size: %s" % shape
        cap = ("Left: throughput against the batch size; right: time per mini-batch (log). "
               "Every point is a separate context that differs only in the batch. ")
    title = title_of(subj, gkey, drop=(field,))
    _legend_outside(ax2, title="implementation")
    fig.subplots_adjust(wspace=0.28)
    _suptitle(fig, ax1, title)
    caption = cap + " ".join(n + "." for n in notes) + " " + _caption_ctx(gkey, drop=(field,))
    w.save(fig, name, title, caption.replace("  ", " "))


# ----------------------------------------------------------------------------------------------
# 5. All-reduce
# ----------------------------------------------------------------------------------------------

def plot_allreduce(data, w, styles):
    groups = {}
    for e in data.entries.values():
        if e.prim == "allreduce" and e.ok:
            groups.setdefault(R.key_without(e.key, "ranks"), []).append(e)
    names = context_names(groups)
    for gkey, entries in groups.items():
        nm = "allreduce" + names[gkey]
        _try(w, nm, lambda: _allreduce_one(w, gkey, entries, nm, styles))


def _allreduce_one(w, gkey, entries, name, styles):
    from matplotlib.ticker import FuncFormatter
    series = {}
    for e in entries:
        m = re.match(r"n(\d+)", e.label or "")
        if not m:
            m = re.search(r"n(\d+)", e.short)
        if not m:
            continue
        nbytes = 4.0 * int(m.group(1))
        p = e.value("ranks") or _sweep_value(e, "ranks") or 1.0
        series.setdefault((e.impl, int(p)), []).append((nbytes, e))
    if not series:
        return
    fig = _figure(11.5, 4.6)
    ax1, ax2 = fig.subplots(1, 2)
    ranks = sorted(set(p for _, p in series))
    impls = _impl_order(i for i, _ in series)
    any_bus = any(p > 1 for _, p in series)
    colours = _line_colours(impls)
    for (impl, p) in sorted(series, key=lambda s: (impls.index(s[0]), s[1])):
        pts = sorted(series[(impl, p)], key=lambda t: t[0])
        st = styles.marker(impl, colours[impl])
        ls = _LINESTYLES[ranks.index(p) % len(_LINESTYLES)]
        lab = "%s, p=%d" % (impl, p)
        xs = [x for x, _ in pts]
        lat = [e.value("latency_us") or ((e.seconds() or 0) * 1e6) for _, e in pts]
        if any_bus and p > 1:
            bus = [(e.value("busbw") or 0) / 1e9 for _, e in pts]
            ax1.plot(xs, bus, ls=ls, lw=1.3, ms=6, label=lab, gid="bus-%s-p%d" % (slug(impl), p),
                     **st)
        elif not any_bus:
            alg = [(e.value("algbw") or 0) / 1e9 for _, e in pts]
            ax1.plot(xs, alg, ls=ls, lw=1.3, ms=6, label=lab, gid="alg-%s-p%d" % (slug(impl), p),
                     **st)
        ax2.plot(xs, lat, ls=ls, lw=1.3, ms=6, label=lab, gid="lat-%s-p%d" % (slug(impl), p),
                 **st)
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(_bytes_fmt))
        ax.set_xlabel("message size (bytes = 4 x elements, fp32)")
    if any_bus:
        ax1.set_ylabel("bus bandwidth busbw (GB/s)")
    else:
        ax1.set_ylabel("algorithm bandwidth algbw (GB/s)")
        ax1.text(0.98, 0.97, "one rank only: busbw = algbw x 2(p-1)/p is 0,\nso algbw is shown "
                 "(tools/allreduce --ranks 2,4\nmeasures across processes)",
                 transform=ax1.transAxes, ha="right", va="top", fontsize=7.5,
                 bbox=dict(fc="white", ec="#999999", pad=3))
    ax1.set_ylim(bottom=0)
    ax2.set_yscale("log")
    _log_ticks(ax2.yaxis)
    ax2.set_ylabel("latency per all-reduce (us)")
    title = title_of("All-reduce: bus bandwidth and latency against message size", gkey,
                     drop=("ranks",))
    h, l = ax2.get_legend_handles_labels()
    _legend_outside(ax2, title="implementation, ranks\n(line style: ranks)", handles=h, labels=l)
    fig.subplots_adjust(wspace=0.25)
    _suptitle(fig, ax1, title)
    caption = ("All-reduce of fp32 buffers as nccl-tests reports it: left the bus bandwidth "
               "(algbw x 2(p-1)/p, comparable across rank counts; with one rank only, which has "
               "none, the algorithm bandwidth, bytes / time), right the "
               "time per all-reduce, per implementation (marker) and rank count p (line style). "
               + _caption_ctx(gkey, drop=("ranks",)))
    w.save(fig, name, title, caption)


# ----------------------------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------------------------

def _try(w, name, fn):
    try:
        fn()
    except Exception as e:  # never let one plot stop the others (or the report)
        _warn(w.prog, "plot %s skipped: %s: %s" % (name, type(e).__name__, e))
    finally:
        pass


_PLOTTERS = {"roofline": plot_roofline, "network": plot_networks, "heatmap": plot_heatmaps,
             "error": plot_error, "scaling": plot_scaling, "allreduce": plot_allreduce}


def available():
    """None when matplotlib imports, else the reason."""
    try:
        import matplotlib  # noqa: F401
        matplotlib.use("Agg", force=True)
        import matplotlib.figure  # noqa: F401
        import matplotlib.backends.backend_agg  # noqa: F401
        return None
    except Exception as e:  # ImportError, or a broken install
        return "matplotlib cannot be imported by %s (%s); Debian's python3-matplotlib " \
               "(tools/setup) under /usr/bin/python3 has it" % (sys.executable, e)


def plot_all(paths, outdir, kinds=None, formats=None, prog="plot"):
    """Writes every plot the results allow to `outdir` (<name>.svg, <name>.png) and returns
    [dict(name, title, caption, svg, files)]; [] when nothing is plottable. Never raises."""
    try:
        why = available()
        if why:
            _warn(prog, why)
            return []
        import matplotlib
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        kinds = [k for k in (kinds or KINDS) if k in _PLOTTERS]
        formats = [f for f in (formats or FORMATS) if f in FORMATS]
        data = collect(paths, prog)
        w = Writer(str(outdir), formats, prog)
        styles = Styles()
        with matplotlib.rc_context(_RC):
            for k in kinds:
                try:
                    _PLOTTERS[k](data, w, styles)
                except Exception as e:
                    _warn(prog, "%s plots skipped: %s: %s" % (k, type(e).__name__, e))
        return w.results
    except Exception as e:
        _warn(prog, "plots skipped: %s: %s" % (type(e).__name__, e))
        return []
