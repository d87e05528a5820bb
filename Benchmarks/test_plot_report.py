"""Tests of Benchmarks/plot_report.py on a hand-made rows.json (no marker-bench run): the plots
that the rows feed are written and decode as PNG images with something drawn, report.md keeps
its table and gets one plots section linking exactly them, and bad input is refused.

    python3 Benchmarks/test_plot_report.py        (`make test` runs it; a few seconds)
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

import numpy
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plot_report  # noqa: E402

ALL = ["latency.png", "tiles.png", "load.png", "memory.png", "anchors.png"]


def spread(p50, n=200):
    """n latency samples (µs) from 0.8x to 2x p50, deterministic."""
    return [round(p50 * (0.8 + 1.2 * i / (n - 1)) ** 2, 1) for i in range(n)]


def row(measure, value, unit, size="100k", **extra):
    return {"size": size, "measure": measure, "value": value, "unit": unit, "floor": "", "ratio": "", "note": "", **extra}


#: One row of each kind the plots read, as marker-bench --report writes them.
ROWS = [
    row("load via RPC (BulkLoader 50k x 4, fresh server, ephemeral)", "1,266,675", "markers/s"),
    row("markerd resident bytes per marker (VmRSS delta / N)", "114.6", "B/marker"),
    row("... minus id bytes", "107.7", "B/marker"),
    row("floor: bare NNG REQ/REP round trip, loopback TCP, 2 processes", "82.9 / 121", "µs p50 / p99",
        samplesMicros=spread(80), floorSamplesMicros=spread(80)),
    row("QueryViewport 1080x1920 px z12-16 near cities (TILED)", "92.1 / 150", "µs p50 / p99",
        samplesMicros=spread(92), floorSamplesMicros=spread(67)),
    row("HitTest near a random marker, z12-16 (tiled layer)", "109 / 184", "µs p50 / p99",
        samplesMicros=spread(109), floorSamplesMicros=spread(82)),
    row("GetTile cold z10, 256 px d1, tiles under city markers (renders every call)", "2.20 / 3.51", "ms p50 / p99",
        samplesMicros=spread(2200), floorSamplesMicros=spread(190)),
    row("GetTile warm (cached) z10, 256 px d1", "123 / 185", "µs p50 / p99",
        samplesMicros=spread(123), floorSamplesMicros=spread(106)),
    row("markerd grid clusters: build on the first GetClusters after the load (world z0)", "0.37", "s"),
    row("pysupercluster index build (same points, radius 60, extent 512, zoom 0-16)", "2.91", "s"),
    row("markerd: move 1 % of the markers (MoveMarkers x1,000, clusters follow) + GetClusters world z3", "92", "ms"),
    row("pysupercluster: full rebuild after the same 1 % moves + world z3 query", "2950", "ms"),
    row("GetTile cold z10 (Paris), real places, labelled, 256 px d1", "1.75 / 3.14", "ms p50 / p99",
        samplesMicros=spread(1750, 20)),
    row("Mapnik 3.1 z10 (Paris), same places and tiles, pins + labels de-cluttered (cold renders)",
        "123.94 / 572.16", "ms p50 / p99", samplesMicros=spread(123940, 9)),
    row("Mapnik 3.1 z0, same places and tiles, pins + labels de-cluttered (cold renders)", "> 43975", "ms"),
    row("GetTile cold z0, real places, labelled, 256 px d1", "120.63 / 142.68", "ms p50 / p99"),
]


def write_rows(directory, rows):
    path = os.path.join(directory, "rows.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"started": "2026-12-06T00:00:00Z", "machine": "test", "options": "--sizes 100000", "rows": rows}, f)
    return path


def run(*args):
    """plot_report.main(args) in this process (one matplotlib import for all tests): (status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = plot_report.main(list(args))
    return status, err.getvalue()


class PlotReportTests(unittest.TestCase):
    def test_every_plot_is_written_and_linked_once(self):
        with tempfile.TemporaryDirectory() as d:
            rows = write_rows(d, ROWS)
            with open(os.path.join(d, "report.md"), "w", encoding="utf-8") as f:
                f.write("## marker-bench\n\n| N | Measure |\n| --- | --- |\n")
            for _ in range(2):  # a second run replaces the section rather than adding one
                status, err = run(rows, "--out", d)
                self.assertEqual(status, 0, err)
            self.assertEqual(sorted(n for n in os.listdir(d) if n.endswith(".png")), sorted(ALL))
            for name in ALL:
                with Image.open(os.path.join(d, name)) as image:
                    image.load()
                    self.assertEqual(image.format, "PNG")
                    pixels = numpy.asarray(image.convert("RGB"))
                # Something is drawn: the markerd colour appears, not only the white background.
                self.assertTrue(numpy.all(pixels == (0xC0, 0x39, 0x2B), axis=-1).any(), name)
                self.assertLess(os.path.getsize(os.path.join(d, name)), 100_000, name)
            with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
                report = f.read()
            self.assertTrue(report.startswith("## marker-bench\n\n| N | Measure |\n"), report)
            self.assertEqual(report.count("\n## Plots\n"), 1, report)
            self.assertEqual([line.split("](")[1].rstrip(")") for line in report.splitlines() if line.startswith("![")], ALL)

    def test_only_the_plots_the_rows_feed(self):
        with tempfile.TemporaryDirectory() as d:
            rows = write_rows(d, [r for r in ROWS if r["unit"] == "markers/s"])
            status, err = run(rows, "--out", os.path.join(d, "out"))
            self.assertEqual(status, 0, err)
            self.assertEqual(sorted(os.listdir(os.path.join(d, "out"))), ["load.png", "report.md"])

    def test_unreadable_input_exits_2(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "rows.json")
            with open(bad, "w") as f:
                f.write("{not json")
            status, err = run(bad, "--out", d)
            self.assertEqual(status, 2)
            self.assertIn("cannot read", err)
            self.assertEqual(os.listdir(d), ["rows.json"])

    def test_values_and_percentiles(self):
        self.assertEqual(plot_report.numbers("1,266,675"), [1266675.0])
        self.assertEqual(plot_report.numbers("> 43975"), [43975.0])
        self.assertEqual(plot_report.percentile([5, 1, 4, 2, 3], 0.5), 3)
        self.assertEqual(plot_report.percentile(list(range(1, 101)), 0.99), 99)
        # Without samples, p50 / p99 come from the value cell, in µs.
        self.assertEqual(plot_report.micros(row("x", "2.72 / 9.28", "ms p50 / p99")), (2720.0, 9280.0))


if __name__ == "__main__":
    unittest.main()
