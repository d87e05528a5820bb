#!/usr/bin/env python3
"""Generates a synthetic marker file for markerctl load: 70 % of the markers in Gaussian clusters
around a few hundred seeded "city" centres, 30 % uniform over the Web Mercator world.

    scripts/gen-markers.py --count 1000000 --out /tmp/markers-1m.csv            # CSV: id,lat,lon,z_index,name
    scripts/gen-markers.py --count 10000 --format geojson --out /tmp/m.geojson  # GeoJSON Point features

Deterministic for a given --seed (default 42). Prints progress on stderr.
"""
import argparse
import json
import math
import random
import sys

MAX_LAT = 85.05112878


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--format", choices=["csv", "geojson"], default="csv")
    ap.add_argument("--cities", type=int, default=300)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    cities = [(rng.uniform(-60, 70), rng.uniform(-180, 180), rng.uniform(0.02, 0.3)) for _ in range(a.cities)]
    step = max(1, a.count // 20)
    with open(a.out, "w") as f:
        if a.format == "csv":
            f.write("id,lat,lon,z_index,name\n")
        else:
            f.write('{"type":"FeatureCollection","features":[\n')
        for i in range(a.count):
            if rng.random() < 0.7:
                clat, clon, sigma = cities[rng.randrange(len(cities))]
                lat = min(MAX_LAT, max(-MAX_LAT, rng.gauss(clat, sigma)))
                lon = rng.gauss(clon, sigma / max(0.2, math.cos(math.radians(clat))))
                lon = (lon + 180.0) % 360.0 - 180.0
            else:
                lat = rng.uniform(-MAX_LAT, MAX_LAT)
                lon = rng.uniform(-180.0, 180.0)
            z = rng.randrange(3)
            mid = f"m{i}"
            if a.format == "csv":
                f.write(f"{mid},{lat:.7f},{lon:.7f},{z},marker {i}\n")
            else:
                feat = {"type": "Feature", "id": mid, "properties": {"name": f"marker {i}", "z_index": z},
                        "geometry": {"type": "Point", "coordinates": [round(lon, 7), round(lat, 7)]}}
                f.write(("," if i else "") + json.dumps(feat, separators=(",", ":")) + "\n")
            if (i + 1) % step == 0:
                print(f"gen-markers: {i + 1}/{a.count}", file=sys.stderr)
        if a.format == "geojson":
            f.write("]}\n")


if __name__ == "__main__":
    main()
