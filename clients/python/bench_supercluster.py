#!/usr/bin/env python3
"""pysupercluster reference figures for markerd's cluster benchmark (run by a gated Swift test).

    python3 clients/python/bench_supercluster.py N SEED     prints JSON: build seconds, RSS growth, query times

Points: N uniform positions (longitude -180..180, latitude -85..85) from numpy's seeded generator;
a 1 % move is measured as a full reload (pysupercluster has no updates).
"""
import json, resource, sys, time

import numpy as np
import pysupercluster


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


n, seed = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(seed)
pts = np.column_stack([rng.uniform(-180, 180, n), rng.uniform(-85, 85, n)])
before = rss()
t0 = time.perf_counter()
idx = pysupercluster.SuperCluster(pts, min_zoom=0, max_zoom=16, radius=60, extent=512)
build = time.perf_counter() - t0
grown = rss() - before
q = {}
for z in range(4):
    t0 = time.perf_counter()
    c = idx.getClusters(top_left=(-180, 85), bottom_right=(180, -85), zoom=z)
    q["world_z%d_ms" % z] = (time.perf_counter() - t0) * 1000
    q["world_z%d_items" % z] = len(c)
t0 = time.perf_counter()
c = idx.getClusters(top_left=(2.2, 48.95), bottom_right=(2.5, 48.75), zoom=12)
q["city_z12_ms"] = (time.perf_counter() - t0) * 1000
moved = pts.copy()
k = n // 100
moved[:k, 0] = rng.uniform(-180, 180, k)
t0 = time.perf_counter()
idx2 = pysupercluster.SuperCluster(moved, min_zoom=0, max_zoom=16, radius=60, extent=512)
reload = time.perf_counter() - t0
print(json.dumps({"n": n, "build_s": build, "rss_growth_mib": grown / 2**20, "reload_after_1pct_move_s": reload, **q}))
