#!/usr/bin/env python3
"""Opens an nnperf report.html in headless Chromium and checks what a reader would see.

  check_report_html.py REPORT.html --figures N [--text T ...] [--absent T ...]

Fails (exit 1, one line per problem) when the page logs anything to the console (a script error
included), when fewer than N figures are in the page or any of them did not decode (the page's own
script counts them into <body data-figures / data-figures-loaded>), when an expected text is
missing from or a forbidden markup is present in the rendered DOM, or when a screenshot of the page
is blank. Exit 77 (ctest's skip code) when Chromium is not installed, unless CI=true.
Standard library only: the PNG screenshot is decoded here.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run(browser, args, timeout=120):
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", "--disable-background-networking", "--hide-scrollbars"]
    return subprocess.run(base + args, capture_output=True, text=True, timeout=timeout)


def png_pixels(path):
    """(width, height, rows of bytes, channels) of an 8-bit RGB/RGBA non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {color})")
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows, channels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("html")
    ap.add_argument("--figures", type=int, default=1)
    ap.add_argument("--text", action="append", default=[], help="must appear in the rendered DOM")
    ap.add_argument("--absent", action="append", default=[], help="must not appear in the DOM")
    a = ap.parse_args()
    browser = chromium()
    if not browser:
        if os.environ.get("CI") == "true":
            print("check_report_html: chromium not installed (scripts/install-deps.sh installs it)")
            return 1
        print("check_report_html: SKIPPED: chromium not installed")
        return 77
    url = "file://" + os.path.abspath(a.html)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        dom = run(browser, [f"--user-data-dir={tmp}/profile", "--enable-logging=stderr", "--v=0",
                            "--virtual-time-budget=5000", "--dump-dom", url])
        if dom.returncode != 0:
            problems.append(f"chromium --dump-dom exited {dom.returncode}: {dom.stderr.strip()[-300:]}")
        for line in dom.stderr.splitlines():
            if ":CONSOLE" in line:
                problems.append(f"console message: {line.strip()}")
        body = re.search(r"<body([^>]*)>", dom.stdout)
        attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', body.group(1))) if body else {}
        total = int(attrs.get("data-figures", "-1"))
        loaded = int(attrs.get("data-figures-loaded", "-1"))
        if total < a.figures:
            problems.append(f"{total} figures in the page, expected at least {a.figures} (did the script run?)")
        if loaded != total:
            problems.append(f"only {loaded} of {total} figures decoded")
        for t in a.text:
            if t not in dom.stdout:
                problems.append(f"text not in the page: {t}")
        for t in a.absent:
            if t in dom.stdout:
                problems.append(f"present in the page but must not be: {t}")
        shot = os.path.join(tmp, "shot.png")
        run(browser, [f"--user-data-dir={tmp}/profile2", "--window-size=1200,1600",
                      "--virtual-time-budget=5000", f"--screenshot={shot}", url])
        if not os.path.exists(shot):
            problems.append("no screenshot was written")
        else:
            w, h, rows, ch = png_pixels(shot)
            colours, dark = set(), 0
            for y in range(0, h, 4):
                r = rows[y]
                for x in range(0, w * ch, 4 * ch):
                    px = r[x:x + 3]
                    colours.add(px)
                    if sum(px) < 600:
                        dark += 1
            share = dark / max(1, (h // 4) * (w // 4))
            if len(colours) < 8 or share < 0.01:
                problems.append(f"screenshot looks blank ({len(colours)} colours, {share:.2%} non-white)")
    for p in problems:
        print(f"check_report_html: {a.html}: {p}")
    if not problems:
        print(f"check_report_html: {a.html}: ok ({total} figures, no console messages)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
