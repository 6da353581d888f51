#!/usr/bin/env python3
"""Runs `primbench run gemm ... --save DIR` and re-checks the saved arrays with numpy alone:
the files must describe the problem well enough for anyone to verify the result."""
import json
import subprocess
import sys
import tempfile

import numpy as np

cli = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    desc = "m37n23k41_tn_alpha0.5beta-1ldc40"
    r = subprocess.run([cli, "run", "gemm", desc, "--impl", "all", "--save", d, "--reps", "1"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    prob = json.load(open(f"{d}/problem.json"))
    assert prob["desc"] == desc, prob
    ins = {t["name"]: np.load(f"{d}/{t['file']}") for t in prob["inputs"]}
    # (cols, ld) arrays: element (i, j) of a column-major matrix is arr[j, i].
    A, B, C = (ins[k].T for k in "ABC")
    m, n, k = 37, 23, 41
    opA = A[:k, :m].T.astype(np.float64)   # A stored k x m (transposed)
    opB = B[:k, :n].astype(np.float64)
    want = C.astype(np.float64).copy()
    want[:m, :n] = 0.5 * opA @ opB - 1.0 * C[:m, :n]
    assert prob["outputs"], "no implementation saved an output"
    for o in prob["outputs"]:
        got = np.load(f"{d}/{o['file']}").T
        assert got.shape == want.shape, (o, got.shape, want.shape)
        err = np.abs(got - want).max()
        assert err == 0, f"{o['impl']}: max abs error {err}"
    print(f"ok: {len(prob['outputs'])} outputs re-checked with numpy")
