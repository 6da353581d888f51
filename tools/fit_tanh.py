#!/usr/bin/env python3
"""Writes the tables of the AVX-512 tanh in kernels/core/vmath.cpp (namespace tanh_pw).

Intervals of |x|: [0, 1/8), each binade from 1/8 to 8 in halves, then [8, 9] (|x| is clamped
at 9, where tanh rounds to 1 in fp32). Per interval, the degree-7 polynomial in t = |x| - centre
that interpolates tanh at the 8 Chebyshev nodes, solved in fp64 and rounded to fp32; on [0, 1/8)
it is t times the degree-6 fit of tanh(t)/t, so that its constant term is 0. Prints the largest
relative error of each interval's fp32 coefficients (fp64 evaluation, in units of 2^-24) to
stderr and the C++ tables to stdout. Standard library only.
"""
import math
import struct
import sys

DEGREE = 7


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def solve(a, b):
    """Gaussian elimination with partial pivoting."""
    n = len(a)
    m = [row[:] + [bb] for row, bb in zip(a, b)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] for i in range(n)]


def chebyshev_fit(g, lo, hi, degree):
    """Monomial coefficients of the polynomial through g at the Chebyshev nodes of [lo, hi]."""
    nodes = [(lo + hi) / 2 + (hi - lo) / 2 * math.cos(math.pi * (2 * i + 1) / (2 * (degree + 1)))
             for i in range(degree + 1)]
    return solve([[x ** j for j in range(degree + 1)] for x in nodes], [g(x) for x in nodes])


def intervals():
    iv = [(0.0, 0.125)]
    b = 0.125
    while b < 8.0:
        iv += [(b, 1.5 * b), (1.5 * b, 2 * b)]
        b *= 2
    iv[-1] = (iv[-1][0], 8.0)
    return iv + [(8.0, 9.0)]


def main():
    centres, coeffs = [], []
    for i, (lo, hi) in enumerate(intervals()):
        if i == 0:
            q = chebyshev_fit(lambda t: math.tanh(t) / t if t > 0 else 1.0, lo, hi, DEGREE - 1)
            c, centre = [0.0] + [f32(v) for v in q], 0.0
        else:
            centre = f32((lo + hi) / 2)
            c = [f32(v) for v in chebyshev_fit(lambda t: math.tanh(t + centre), lo - centre,
                                                hi - centre, DEGREE)]
        worst = 0.0
        for j in range(1, 4001):
            x = lo + (hi - lo) * j / 4001
            p = 0.0
            for cc in reversed(c):
                p = p * (x - centre) + cc
            worst = max(worst, abs(p - math.tanh(x)) / math.tanh(x))
        print(f"[{lo}, {hi}): {worst / 2 ** -24:.3f}", file=sys.stderr)
        centres.append(centre)
        coeffs.append(c)
    if len(centres) > 16:
        sys.exit("more than 16 intervals: one 16-lane permute cannot pick them")

    def row(v):
        v = v + [v[-1]] * (16 - len(v))  # lanes past the last interval repeat it
        return "{" + ", ".join(repr(float(x)) + "f" for x in v) + "}"

    print(f"constexpr float kCtr[16] = {row(centres)};")
    print(f"constexpr float kC[{DEGREE + 1}][16] = {{")
    print(",\n".join("    " + row([c[j] for c in coeffs]) for j in range(DEGREE + 1)) + "};")


if __name__ == "__main__":
    main()
