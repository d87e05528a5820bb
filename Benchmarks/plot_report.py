#!/usr/bin/env python3
"""PNG plots of marker-bench's rows.json (`marker-bench --report DIR` runs this on DIR/rows.json).

    python3 Benchmarks/plot_report.py DIR/rows.json [MORE/rows.json ...] --out DIR

Reads one or more rows.json files (several: e.g. a run's default sections and an `--only labels`
run, plotted together) and writes into --out the plots that their rows allow, each skipped when
no row feeds it:

  latency.png   RPC latency distributions per method (box: p25-p75, line: median, whiskers:
                p1-p99) beside the bare NNG round trip of the same bytes measured in the same
                run; the p50 and p99 ratios at the right
  tiles.png     GetTile by zoom, cold (rendered every call) and warm (cached), with the floor
  load.png      bulk-load rates (markers/s) with the 1M markers/s target
  memory.png    bytes per marker (resident, journal, snapshot, with attributes)
  anchors.png   the references beside markerd: pysupercluster for clusters, Mapnik for
                labelled tiles (a Mapnik render stopped at its time limit is a lower bound)

rows.json (marker-bench's Report.Document): {"started", "machine", "options", "rows": [...]}, each
row the table's cells as strings ("size", "measure", "value", "unit", "floor", "ratio", "note",
"target": {"text", "met", "atTargetSize", "status"} when it has one) and, for rows that summarise
latencies, "samplesMicros" (every timed call, µs) and "floorSamplesMicros" (the interleaved bare
round trips of the same bytes). The plots find their rows by the stable measure names.

It then ends --out/report.md with a "## Plots" section linking the PNGs (replacing such a
section if there is one; creating report.md if missing). Needs matplotlib. Exit status 0, or 2
when an input cannot be read.
"""
import argparse
import json
import math
import os
import re
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

#: Plots in the order report.md lists them, with their captions.
PLOTS = {
    "latency.png": "RPC latency per method against the bare NNG round trip of the same bytes (the floor)",
    "tiles.png": "GetTile by zoom, cold and warm, against the floor",
    "load.png": "Bulk-load rate",
    "memory.png": "Bytes per marker",
    "anchors.png": "markerd beside the references: pysupercluster (clusters) and Mapnik (labelled tiles)",
}
SECTION = "## Plots"
MARKERD, FLOOR, ANCHOR = "#c0392b", "#95a5a6", "#2c7fb8"
DPI = 80
#: Legends of the box plots: above the axes, right of the title, clear of the boxes.
ABOVE = {"loc": "lower right", "bbox_to_anchor": (1.0, 1.0), "ncol": 3, "fontsize": 8, "frameon": False}
#: Horizontal boxes: `orientation` from matplotlib 3.10 (which deprecates `vert`), `vert` before (Debian 12 has 3.6).
HORIZONTAL = {"orientation": "horizontal"} if tuple(int(p) for p in matplotlib.__version__.split(".")[:2]) >= (3, 10) else {"vert": False}


def load_rows(paths):
    """Every row of the files, in order."""
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            rows += json.load(f)["rows"]
    return rows


def numbers(value):
    """The numbers in a value cell ("1,266,675" -> [1266675.0], "2.72 / 9.28" -> [2.72, 9.28])."""
    return [float(n) for n in re.findall(r"\d+(?:\.\d+)?", value.replace(",", ""))]


def micros(row):
    """(p50, p99) of a latency row in microseconds: from its samples, else from its value cell."""
    s = row.get("samplesMicros")
    if s:
        return percentile(s, 0.5), percentile(s, 0.99)
    n = numbers(row["value"])
    scale = 1000.0 if row["unit"].startswith("ms") else 1.0
    return n[0] * scale, n[-1] * scale


def percentile(samples, p):
    """Nearest-rank percentile, as marker-bench's Stats.percentile."""
    s = sorted(samples)
    return s[min(len(s), max(1, math.ceil(p * len(s)))) - 1]


def label(row, width=44):
    """The row's measure, shortened to two lines, with its size when it has one."""
    text = row["measure"].replace("... minus id bytes", "resident bytes per marker, minus id bytes")
    text = re.sub(r", 256 px d1.*|, tiles under city markers.*", "", text)
    lines = textwrap.wrap(text, width)
    if len(lines) > 2:
        lines = [lines[0], lines[1][: width - 1] + "…"]
    size = row["size"]
    return ("" if size == "-" else size + ": ") + "\n".join(lines)


def box(ax, data, position, color, ms=False):
    """One horizontal box: p25-p75, median line, whiskers at p1 and p99, no outliers."""
    scale = 1000.0 if ms else 1.0
    vals = [v / scale for v in data]
    stats = [{
        "med": percentile(vals, 0.5), "q1": percentile(vals, 0.25), "q3": percentile(vals, 0.75),
        "whislo": percentile(vals, 0.01), "whishi": percentile(vals, 0.99), "fliers": [],
    }]
    ax.bxp(stats, positions=[position], widths=0.35, patch_artist=True, showfliers=False,
           boxprops={"facecolor": color, "edgecolor": "black", "linewidth": 0.6},
           medianprops={"color": "black"}, whiskerprops={"linewidth": 0.8}, capprops={"linewidth": 0.8}, **HORIZONTAL)


def log_axis(axis):
    """A log axis labelled 0.5, 50, 100,000 rather than 5 x 10^1."""
    def plain(v):
        return f"{v:,.0f}" if v >= 1 else f"{v:g}"
    axis.set_major_formatter(FuncFormatter(lambda v, _: plain(v)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: plain(v) if plain(v)[0] in "25" else ""))
    axis.set_tick_params(which="minor", labelsize=7)


def save(fig, out, name, written):
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=DPI)
    plt.close(fig)
    written.append(name)


def plot_latency(rows, out, written):
    """RPC methods with samples and an interleaved floor (GetTile is in tiles.png)."""
    picked = [r for r in rows if r.get("samplesMicros") and r.get("floorSamplesMicros")
              and not r["measure"].startswith(("GetTile", "floor", "TLS"))]
    if not picked:
        return
    fig, ax = plt.subplots(figsize=(10, 0.75 * len(picked) + 1.2))
    for i, r in enumerate(reversed(picked)):
        box(ax, r["samplesMicros"], i + 0.2, MARKERD)
        box(ax, r["floorSamplesMicros"], i - 0.2, FLOOR)
        r50, r99 = (percentile(r["samplesMicros"], p) / percentile(r["floorSamplesMicros"], p) for p in (0.5, 0.99))
        ax.annotate(f"p50 {r50:.2f}x\np99 {r99:.2f}x", xy=(1.0, i), xycoords=("axes fraction", "data"),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(range(len(picked)), [label(r) for r in reversed(picked)], fontsize=8)
    ax.set_xscale("log")
    log_axis(ax.xaxis)
    ax.set_xlabel("latency, µs (log): box p25-p75, whiskers p1-p99")
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=MARKERD), plt.Rectangle((0, 0), 1, 1, color=FLOOR)],
              labels=["markerd", "NNG floor, same bytes"], **ABOVE)
    ax.set_title("RPC latency against the NNG floor", loc="left")
    ax.grid(axis="x", which="both", alpha=0.3)
    save(fig, out, "latency.png", written)


def plot_tiles(rows, out, written):
    """Synthetic-layer GetTile cold and warm per zoom (and size), box per kind, floor in grey."""
    kinds = {}
    for r in rows:
        m = re.match(r"GetTile (cold|warm \(cached\)) z(\d+), 256 px", r["measure"])
        if m and r.get("samplesMicros"):
            kinds.setdefault((r["size"], int(m.group(2))), {})[m.group(1).split()[0]] = r
    if not kinds:
        return
    keys = sorted(kinds, key=lambda k: (k[0], k[1]))
    fig, ax = plt.subplots(figsize=(10, 0.9 * len(keys) + 1.4))
    for i, key in enumerate(reversed(keys)):
        for offset, kind, color in ((0.28, "cold", MARKERD), (0.0, "warm", "#e59866")):
            r = kinds[key].get(kind)
            if r:
                box(ax, r["samplesMicros"], i + offset, color, ms=True)
        floor = [s for k in ("cold", "warm") if k in kinds[key] for s in kinds[key][k].get("floorSamplesMicros") or []]
        if floor:
            box(ax, floor, i - 0.28, FLOOR, ms=True)
    ax.set_yticks(range(len(keys)), [("" if s == "-" else s + " ") + f"z{z}" for s, z in reversed(keys)])
    ax.set_xscale("log")
    log_axis(ax.xaxis)
    ax.set_xlim(right=max(ax.get_xlim()[1], 20))
    ax.axvline(5, color="black", linestyle="--", linewidth=0.8)
    ax.text(5, len(keys) - 0.5, " cold p99 target at z >= 10: < 5 ms", fontsize=8, va="bottom")
    ax.set_xlabel("GetTile latency, ms (log): box p25-p75, whiskers p1-p99")
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in (MARKERD, "#e59866", FLOOR)],
              labels=["cold (rendered every call)", "warm (cached)", "NNG floor, same bytes"], **ABOVE)
    ax.set_title("Raster tiles (256 px) by zoom", loc="left")
    ax.grid(axis="x", which="both", alpha=0.3)
    save(fig, out, "tiles.png", written)


def bars(rows, out, written, name, title, xlabel, target=None, scale=1.0):
    """Horizontal bars of the rows' first number (divided by scale), with an optional target line."""
    rows = [r for r in rows if numbers(r["value"])]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(rows) + 1.2))
    values = [numbers(r["value"])[0] / scale for r in reversed(rows)]
    ax.barh(range(len(rows)), values, color=MARKERD, height=0.6)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:,.2f}" if v < 10 else f" {v:,.0f}", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [label(r, 50) for r in reversed(rows)], fontsize=8)
    if target:
        ax.axvline(target[0], color="black", linestyle="--", linewidth=0.8)
        ax.text(target[0], len(rows) - 0.5, target[1] + " ", fontsize=8, va="bottom", ha="right")
    ax.set_xlim(0, max(values + [target[0] if target else 0]) * 1.25)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    save(fig, out, name, written)


def plot_load(rows, out, written):
    picked = [r for r in rows if r["unit"] == "markers/s" and "load" in r["measure"].lower()]
    bars(picked, out, written, "load.png", "Bulk load through the RPC", "million markers/s",
         target=(1.0, "target >= 1M markers/s"), scale=1e6)


def plot_memory(rows, out, written):
    picked = [r for r in rows if r["unit"].startswith("B/marker") or r["measure"].startswith("bytes per marker")]
    bars(picked, out, written, "memory.png", "Bytes per marker", "bytes per marker",
         target=(80.0, "target < 80 B resident (less ids)"))


def plot_anchors(rows, out, written):
    """Left: cluster build and update, markerd vs pysupercluster. Right: labelled tiles per zoom,
    markerd vs Mapnik (p50, ms)."""
    def find(prefix):
        return [r for r in rows if r["measure"].startswith(prefix) and numbers(r["value"])]

    clusters = []
    for m, p in zip(find("markerd grid clusters: build"), find("pysupercluster index build")):
        clusters.append((f"{m['size']} build", numbers(m["value"])[0], numbers(p["value"])[0]))
    for m, p in zip(find("markerd: move 1 %"), find("pysupercluster: full rebuild")):
        clusters.append((f"{m['size']} 1 % moved + re-query", numbers(m["value"])[0] / 1000, numbers(p["value"])[0] / 1000))

    labels = []
    for r in rows:
        m = re.match(r"Mapnik 3\.1 (z\d+[^,]*), same places", r["measure"])
        if not m or not numbers(r["value"]):
            continue
        mine = [x for x in rows if x["size"] == r["size"]
                and x["measure"].startswith(f"GetTile cold {m.group(1)}, real places, labelled")]
        if mine:
            labels.append((f"{r['size']} {m.group(1)}", micros(mine[0])[0] / 1000, micros(r)[0] / 1000,
                           r["value"].strip().startswith(">")))
    labels.sort(key=lambda it: (it[0].split()[0], int(re.search(r"z(\d+)", it[0]).group(1))))
    panels = [p for p in (("clusters", clusters), ("labels", labels)) if p[1]]
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.2), squeeze=False)
    for ax, (kind, items) in zip(axes[0], panels):
        xs = range(len(items))
        ours = [it[1] for it in items]
        theirs = [it[2] for it in items]
        ax.bar([x - 0.2 for x in xs], ours, width=0.4, color=MARKERD, label="markerd")
        anchor = "pysupercluster (in process)" if kind == "clusters" else "Mapnik 3.1 (hatched: stopped, lower bound)"
        hatches = ["//" if kind == "labels" and it[3] else "" for it in items]
        ax.bar([x + 0.2 for x in xs], theirs, width=0.4, color=ANCHOR, label=anchor, hatch=hatches)
        for x, it in zip(xs, items):
            ratio = it[2] / it[1]
            bound = "> " if kind == "labels" and it[3] else ""
            ax.text(x + 0.2, it[2], bound + (f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.1f}x"), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(list(xs), [it[0] for it in items], fontsize=8, rotation=30, ha="right")
        ax.set_yscale("log")
        log_axis(ax.yaxis)
        ax.set_ylim(top=max(ours + theirs) * 40)
        if kind == "clusters":
            ax.set_ylabel("seconds (log)")
            ax.set_title("Clusters: markerd (over RPC) vs pysupercluster")
        else:
            ax.set_ylabel("cold labelled tile p50, ms (log)")
            ax.set_title("Labelled tiles: markerd vs Mapnik")
        ax.legend(fontsize=8, loc="upper left")
        ax.grid(axis="y", which="both", alpha=0.3)
    save(fig, out, "anchors.png", written)


def write_section(out, written, inputs):
    """Ends out/report.md with the plots section (replacing an earlier one)."""
    path = os.path.join(out, "report.md")
    text = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    head = "" if text.startswith(SECTION + "\n") else text.split("\n" + SECTION + "\n")[0].rstrip("\n")
    sources = ", ".join(os.path.relpath(p, out) for p in inputs)
    lines = [SECTION, "", f"Drawn by Benchmarks/plot_report.py from {sources}.", ""]
    for name in PLOTS:
        if name in written:
            lines += [f"![{PLOTS[name]}]({name})", ""]
    if not written:
        lines.append("No row of these runs feeds a plot.")
    with open(path, "w", encoding="utf-8") as f:
        f.write((head + "\n\n" if head else "") + "\n".join(lines).rstrip("\n") + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows", nargs="+", help="rows.json written by marker-bench --report")
    parser.add_argument("--out", required=True, help="directory for the PNGs and report.md's plots section")
    args = parser.parse_args(argv)
    try:
        rows = load_rows(args.rows)
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_report: cannot read {args.rows}: {e}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    written = []
    for plot in (plot_latency, plot_tiles, plot_load, plot_memory, plot_anchors):
        plot(rows, args.out, written)
    write_section(args.out, written, args.rows)
    print(f"plot_report: wrote {', '.join(written) or 'no plots (no rows feed them)'} in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
