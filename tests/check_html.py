#!/usr/bin/env python3
"""The HTML report as a person sees it: tools/report --html on synthetic results (those of
check_report.py) is rendered by headless Chromium; the screenshot is not blank, the page needs
nothing from outside (no scripts, style sheets, fonts or remote images: every image is inline
SVG or a data: URI) and every figure of the page is in the DOM Chromium built. Skips (exit 77)
where Chromium is not installed (tools/setup installs Debian's chromium).

Usage: check_html.py <repo root>
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_report as cr  # noqa: E402  (the synthetic results, the DOM parser)

SKIP = 77
from checklib import expect, finish  # noqa: E402


def read_png(path):
    """(width, height, rows of pixel tuples) of an 8-bit RGB or RGBA PNG, decoded with zlib."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    width, height, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("PNG of depth %d, colour type %d, interlace %d not supported"
                         % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(browser, args, url, tmp):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--hide-scrollbars", "--user-data-dir=" + os.path.join(tmp, "profile")]
    env = dict(os.environ, HOME=tmp)
    return subprocess.run(cmd + args + [url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=120, env=env)


def top_level_svgs(node):
    """The <svg> elements not inside another <svg>."""
    if node.tag == "svg":
        return [node]
    return [s for c in node.children for s in top_level_svgs(c)]


def main():
    browser = chromium()
    if not browser:
        print("SKIP: no chromium or chromium-browser on PATH (tools/setup installs Debian's chromium)")
        sys.exit(SKIP)
    root = sys.argv[1] if len(sys.argv) > 1 else cr.ROOT
    report = os.path.join(root, "tools", "report")
    with tempfile.TemporaryDirectory(prefix="pb_html_") as tmp:
        folder = os.path.join(tmp, "results")
        cr.make_results(folder)
        page = os.path.join(folder, "report.html")
        code, out, err = cr.run([report, "--html", folder], timeout=240)
        if not expect(code == 0 and os.path.isfile(page),
                      "tools/report --html writes <folder>/report.html (got %d)" % code, out + err):
            return finish("check_html")
        with open(page, encoding="utf-8") as f:
            source = f.read()
        dom = cr.Dom(source)
        expect(not dom.errors, "the page parses", "; ".join(dom.errors[:5]))
        nodes = list(dom.root.walk())
        imgs = [n for n in nodes if n.tag == "img"]
        svgs = top_level_svgs(dom.root)
        for n in imgs:
            expect(n.attrs.get("src", "").startswith("data:"),
                   "an <img> is a data: URI, not %r" % n.attrs.get("src", "")[:80])
        for n in nodes:
            expect(n.tag not in ("script", "link", "iframe", "object", "embed"),
                   "the page has no <%s> (self-contained, no scripts)" % n.tag)
            for attr in ("href", "xlink:href", "src"):
                v = n.attrs.get(attr) or ""
                expect(not v or v.startswith(("#", "data:")) or n.tag == "a" and v.startswith("#"),
                       "<%s %s=%r> points outside the page" % (n.tag, attr, v[:80]))
        expect("url(http" not in source and "@import" not in source and "@font-face" not in source,
               "the style sheet loads no fonts or images")
        # Where pbplot can draw (Debian's python3 with matplotlib), the page has its plots.
        plots_possible = subprocess.run(
            ["/usr/bin/python3", "-c", "import sys; sys.path.insert(0, %r); import pbplot, matplotlib"
             % os.path.join(root, "tools")], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL).returncode == 0 if os.path.exists("/usr/bin/python3") else False
        figures = [n for n in nodes if n.tag == "figure"]
        if plots_possible:
            expect(figures and len(svgs) >= len(figures),
                   "the page has its plots inline (%d figures, %d svg)" % (len(figures), len(svgs)))
        else:
            print("note: pbplot or matplotlib unavailable: the page has no plots to check")

        url = "file://" + page
        shot = os.path.join(tmp, "shot.png")
        p = browse(browser, ["--screenshot=" + shot, "--window-size=1280,4000"], url, tmp)
        if expect(os.path.isfile(shot), "chromium wrote a screenshot (exit %d)" % p.returncode,
                  p.stderr[-2000:]):
            width, height, bpp, rows = read_png(shot)
            colours, ink = set(), 0
            for y in range(0, height, 2):
                row = rows[y]
                for x in range(0, width * bpp, 2 * bpp):
                    px = row[x:x + 3]
                    colours.add(px)
                    if px != b"\xff\xff\xff":
                        ink += 1
            share = ink / float((height // 2) * (width // 2))
            print("screenshot %dx%d: %d colours, %.1f%% not white; %d figures, %d inline SVG, %d <img>"
                  % (width, height, len(colours), 100 * share, len(figures), len(svgs), len(imgs)))
            expect(len(colours) > 16, "the screenshot is not blank (%d colours)" % len(colours))
            expect(share > 0.01, "the screenshot has text and tables (%.1f%% not white)" % (100 * share))
            top = rows[:300]
            expect(any(r.count(b"\xff") < len(r) for r in top), "the page's top (title) rendered")
        p = browse(browser, ["--dump-dom"], url, tmp)
        rendered = cr.Dom(p.stdout)
        expect(p.returncode == 0 and rendered.root.children, "chromium --dump-dom gives the DOM",
               p.stderr[-2000:])
        r_nodes = list(rendered.root.walk())
        r_svgs = top_level_svgs(rendered.root)
        expect(len(r_svgs) == len(svgs), "every inline SVG is in Chromium's DOM (%d of %d)"
               % (len(r_svgs), len(svgs)))
        for s, r in zip(svgs, r_svgs):
            n_src = sum(1 for _ in s.walk())
            n_dom = sum(1 for _ in r.walk())
            expect(n_dom >= n_src, "SVG %s is whole in the DOM (%d of %d elements)"
                   % (s.attrs.get("id", "?"), n_dom, n_src))
        expect(len([n for n in r_nodes if n.tag == "img"]) == len(imgs),
               "every <img> is in Chromium's DOM")
        expect(len([n for n in r_nodes if n.tag == "table"]) ==
               len([n for n in nodes if n.tag == "table"]), "every table is in Chromium's DOM")
    return finish("check_html")


if __name__ == "__main__":
    main()
