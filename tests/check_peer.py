#!/usr/bin/env python3
"""Smoke test of tools/peer: bad input exits 2 naming the flag; where PyTorch and torchvision
import, a one-step AlexNet inference writes Google Benchmark JSON with the expected rows.
usage: check_peer.py <tools/peer> [<primbench binary>]"""
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("check_peer: FAIL: " + msg)
    sys.exit(1)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=600)
    return r.returncode, r.stdout


def have_torch():
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run(
                [py, "-c", "import torch, torchvision"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return True
    return False


def main():
    if len(sys.argv) < 2:
        fail("usage: check_peer.py <tools/peer> [<primbench binary>]")
    peer = [sys.executable, sys.argv[1]]
    extra = ["--primbench", sys.argv[2]] if len(sys.argv) > 2 else []

    for args, flag in ((["--network", "bogus"], "--network"), (["--batch", "0"], "--batch"),
                       (["--threads", "x"], "--threads"),
                       (["--formats", "frozen", "--mode", "train"], "--formats")):
        rc, out = run(peer + args)
        if rc != 2 or flag not in out:
            fail("%s: expected exit 2 naming %s, got %d: %s" % (" ".join(args), flag, rc, out))
    print("check_peer: bad input exits 2 naming the flag")

    if not have_torch():
        rc, out = run(peer + ["--network", "alexnet", "--batch", "1"])
        if rc != 0 or "tools/setup --peers" not in out:
            fail("without torch: expected exit 0 and a hint, got %d: %s" % (rc, out))
        print("check_peer: torch not importable; the timed run is not checked")
        return

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "peer.json")
        rc, out = run(peer + ["--network", "alexnet", "--mode", "infer", "--batch", "1",
                              "--warmup", "0", "--steps", "1", "--repetitions", "1",
                              "--formats", "nchw,frozen", "--threads", "1", "--out", path] +
                     extra)
        if rc != 0:
            fail("timed run exited %d: %s" % (rc, out))
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    ctx, rows = data.get("context"), data.get("benchmarks")
    if not isinstance(ctx, dict) or not isinstance(rows, list):
        fail("not Google Benchmark JSON: %r" % list(data))
    for k in ("peer", "torch", "threads", "batch", "cpu_model"):
        if k not in ctx:
            fail("context lacks %s" % k)
    if ctx["peer"] != "pytorch" or ctx["threads"] != "1" or ctx["batch"] != "1":
        fail("context: %r" % ctx)
    names = [r.get("name") for r in rows]
    if names != ["net/alexnet/torch/nchw/infer", "net/alexnet/torch/frozen/infer"]:
        fail("rows: %r" % names)
    for r in rows:
        for k in ("images_per_s", "ms_per_batch", "real_time", "cpu_time"):
            if not isinstance(r.get(k), (int, float)) or not r[k] > 0:
                fail("row %s: %s = %r" % (r["name"], k, r.get(k)))
        if r.get("time_unit") != "ms" or r.get("iterations") != 1:
            fail("row %s: time_unit %r, iterations %r" % (r["name"], r.get("time_unit"),
                                                        r.get("iterations")))
        if abs(r["images_per_s"] * r["real_time"] / 1e3 - 1) > 1e-6:
            fail("images_per_s %r does not match real_time %r for batch 1"
                 % (r["images_per_s"], r["real_time"]))
        print("check_peer: %s %.2f ms, %.1f images/s" % (r["name"], r["ms_per_batch"],
                                                        r["images_per_s"]))


if __name__ == "__main__":
    main()
