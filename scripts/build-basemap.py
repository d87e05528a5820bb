#!/usr/bin/env python3
"""Builds the viewer's offline basemap: Natural Earth's countries as GeoJSON, per zoom band.

    python3 scripts/build-basemap.py [--out DIR]     # default DIR: .build/basemap (git-ignored)

Source: Natural Earth 1:110m admin-0 countries (public domain), as the shapefile
`datasets/naturalearth_lowres` that the PyPI wheel geopandas==0.14.4 ships. The wheel is
fetched with `pip download --no-deps` into DIR/src (not installed) and read with pyshp (PyPI
`pyshp`, module `shapefile`). Writes into DIR:

    countries-z0.geojson   z0-z2: rings simplified (Douglas-Peucker, 0.25 degrees), 2 decimals
    countries-z3.geojson   z3 and up: every vertex of the 1:110m data, 4 decimals
    SOURCE.txt             where it came from

markerd serves DIR with `--basemap-dir DIR` (`/viewer/basemap/...`). Does nothing when the
files exist and are newer than this script; `--force` rebuilds.
"""
import argparse
import glob
import io
import json
import os
import subprocess
import sys
import zipfile

WHEEL = "geopandas==0.14.4"
SHAPEFILE = "geopandas/datasets/naturalearth_lowres/naturalearth_lowres"
# (file, Douglas-Peucker tolerance in degrees, decimals kept)
BANDS = [("countries-z0.geojson", 0.25, 2), ("countries-z3.geojson", 0.0, 4)]


def simplify(points, tolerance):
    """Douglas-Peucker on a closed ring (first == last); keeps the ends."""
    if tolerance <= 0 or len(points) < 5:
        return points
    keep = [False] * len(points)
    keep[0] = keep[-1] = True
    stack = [(0, len(points) - 1)]
    while stack:
        a, b = stack.pop()
        (ax, ay), (bx, by) = points[a], points[b]
        dx, dy = bx - ax, by - ay
        norm = (dx * dx + dy * dy) ** 0.5
        best, index = -1.0, -1
        for i in range(a + 1, b):
            px, py = points[i]
            d = abs(dy * (px - ax) - dx * (py - ay)) / norm if norm > 0 else ((px - ax) ** 2 + (py - ay) ** 2) ** 0.5
            if d > best:
                best, index = d, i
        if index >= 0 and best > tolerance:
            keep[index] = True
            stack += [(a, index), (index, b)]
    return [p for p, k in zip(points, keep) if k]


def rings(shape):
    """The shape's rings (lists of (lon, lat)), split at its parts."""
    starts = list(shape.parts) + [len(shape.points)]
    return [shape.points[starts[i]:starts[i + 1]] for i in range(len(starts) - 1)]


def polygons(ring_list):
    """GeoJSON MultiPolygon coordinates: each clockwise ring (shapefile outer ring) starts a
    polygon, counter-clockwise rings are holes of the polygon before them."""
    out = []
    for ring in ring_list:
        area = sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(ring, ring[1:]))
        if area <= 0 or not out:   # clockwise: an outer ring
            out.append([ring])
        else:
            out[-1].append(ring)
    return out


def geojson(records, tolerance, decimals):
    features = []
    for name, iso, shape in records:
        kept = []
        for ring in rings(shape):
            r = simplify([(round(x, decimals), round(max(-85.0, min(85.0, y)), decimals)) for x, y in ring], tolerance)
            if len(r) >= 4:
                kept.append([list(p) for p in r])
        if kept:
            features.append({"type": "Feature", "properties": {"name": name, "iso_a3": iso},
                             "geometry": {"type": "MultiPolygon", "coordinates": polygons(kept)}})
    return {"type": "FeatureCollection", "features": features}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", ".build", "basemap"))
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    outputs = [os.path.join(out, f) for f, _, _ in BANDS]
    if not args.force and all(os.path.exists(p) and os.path.getmtime(p) >= os.path.getmtime(__file__) for p in outputs):
        print(f"build-basemap: {out} is up to date")
        return
    try:
        import shapefile
    except ImportError:
        sys.exit("build-basemap: needs pyshp (python3 -m pip install pyshp; scripts/install-deps.sh --test installs it)")
    src = os.path.join(out, "src")
    os.makedirs(src, exist_ok=True)
    wheels = glob.glob(os.path.join(src, "geopandas-0.14.4-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                        WHEEL, "-d", src], check=True)
        wheels = glob.glob(os.path.join(src, "geopandas-0.14.4-*.whl"))
    with zipfile.ZipFile(wheels[0]) as z:
        files = {ext: io.BytesIO(z.read(f"{SHAPEFILE}.{ext}")) for ext in ("shp", "shx", "dbf")}
        codepage = z.read(f"{SHAPEFILE}.cpg").decode().strip()   # the .dbf's text encoding
    reader = shapefile.Reader(shp=files["shp"], shx=files["shx"], dbf=files["dbf"], encoding=codepage)
    fields = [f[0] for f in reader.fields[1:]]
    records = []
    for sr in reader.iterShapeRecords():
        row = dict(zip(fields, sr.record))
        records.append((row.get("name", ""), row.get("iso_a3", ""), sr.shape))
    for (name, tolerance, decimals), path in zip(BANDS, outputs):
        doc = geojson(records, tolerance, decimals)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, separators=(",", ":"), ensure_ascii=False)
        os.replace(tmp, path)
        vertices = sum(len(r) for ft in doc["features"] for poly in ft["geometry"]["coordinates"] for r in poly)
        print(f"build-basemap: {path}: {len(doc['features'])} countries, {vertices} vertices, {os.path.getsize(path)} bytes")
    with open(os.path.join(out, "SOURCE.txt"), "w") as f:
        f.write(f"Natural Earth 1:110m admin-0 countries (public domain, naturalearthdata.com), from the {WHEEL} wheel's\n"
                f"{SHAPEFILE}.shp, converted by scripts/build-basemap.py.\n")


if __name__ == "__main__":
    main()
