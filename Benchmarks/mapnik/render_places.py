#!/usr/bin/python3
"""Renders XYZ tiles of labelled places with Mapnik 3.1: marker-bench's comparison renderer.

Run with Debian's Python (python3-mapnik 3.1):

    /usr/bin/python3 Benchmarks/mapnik/render_places.py PLACES.tsv 0/0/0 10/518/352 ... [--png-dir DIR [--save Z/X/Y]...]

PLACES.tsv (marker-bench `--only labels` writes it): tab-separated, UTF-8, a header
`x<TAB>y<TAB>name<TAB>population`, one place a line (no tabs or double quotes in names), x and y in EPSG:3857 metres (so Mapnik reprojects nothing), rows in label priority order
(population, highest first: Mapnik places labels in feature order, the first one wins).

Each place is drawn as markerd's labelled layer draws it: a 12 px red circle with a white
outline, and its name beside it (13 px Noto Sans, fonts falling back to Noto Sans CJK JP,
Arabic, Devanagari, Thai, Hebrew, etc.; 1.5 px white halo; 2 px right of the circle, centred
on it vertically; allow-overlap false: de-cluttered, a label that does not fit is dropped while
its circle stays). This is the setup of the issue's reference tiles (one position per label);
markerd tries right, left, below, above, which `--placements E,W,S,N` asks of Mapnik too (about
twice its text work at z10 Paris). Tiles are 256 px, srs epsg:3857, the tile's extent with a 64 px
buffer so labels from points just outside are considered as well.

Timing: the datasource (the TSV, through the CSV plugin, indexed once) is loaded before any tile is timed, as markerd's
markers are loaded before its tiles are, and one small tile (--warmup) is rendered once untimed (Mapnik
opens its font faces on first use: the timed renders measure rendering, not font loading). Then each tile is one `mapnik.render` of a fresh Map
(style, fonts and layer set up again, untimed) into a fresh image: Mapnik keeps nothing between
renders except the loaded datasource and its font and marker caches, so every render is cold,
as markerd's first render of a tile version. The wall time of `mapnik.render` is reported, PNG
encoding excluded (markerd's figures include its PNG encoding, so this favours Mapnik slightly).

Output, one JSON object a line on standard output, flushed as it goes (so a caller that stops
the process at a time limit keeps the lines so far):
    {"event": "loaded", "seconds": S, "envelope": [minx, miny, maxx, maxy]}
    {"event": "start", "tile": "z/x/y"}
    {"event": "tile", "tile": "z/x/y", "seconds": S}
With --png-dir, each tile (or each tile given with --save) is also written as
DIR/mapnik-z-x-y.png after its timing.
"""
import argparse
import json
import math
import os
import sys
import time

import mapnik

WORLD_HALF = 20037508.342789244  # half the EPSG:3857 world's width, metres
FONT_DIRS = ["/usr/share/fonts/truetype/noto", "/usr/share/fonts/opentype/noto"]
FACES = ["Noto Sans Regular", "Noto Sans CJK JP Regular", "Noto Sans Arabic Regular", "Noto Sans Devanagari Regular",
         "Noto Sans Thai Regular", "Noto Sans Hebrew Regular", "Noto Sans Bengali Regular", "Noto Sans Armenian Regular",
         "Noto Sans Georgian Regular", "Noto Sans Ethiopic Regular", "Noto Sans Tamil Regular"]
TILE = 256
BUFFER = 64


def tile_bounds(z, x, y):
    """(minx, miny, maxx, maxy) of tile z/x/y in EPSG:3857 metres."""
    size = 2 * WORLD_HALF / (1 << z)
    minx = -WORLD_HALF + x * size
    maxy = WORLD_HALF - y * size
    return minx, maxy - size, minx + size, maxy


def map_xml(faces, placements=None):
    """The Map XML of the style described in the module doc (the layer's datasource is set apart):
    labels right of the circle, or tried at `placements` in turn (e.g. "E,W,S,N")."""
    face_lines = "".join(f'<Font face-name="{f}"/>' for f in faces)
    where = f'placement-type="simple" placements="{placements}" dx="8" dy="8"' if placements else 'dx="8" dy="0"'
    return f"""<Map srs="epsg:3857" buffer-size="{BUFFER}">
  <FontSet name="places">{face_lines}</FontSet>
  <Style name="places">
    <Rule>
      <MarkersSymbolizer width="12" height="12" fill="#e00000" stroke="white" stroke-width="1"
                         allow-overlap="true" ignore-placement="true"/>
      <TextSymbolizer fontset-name="places" size="13" fill="#202020" halo-fill="white" halo-radius="1.5"
                      allow-overlap="false" {where}>[name]</TextSymbolizer>
    </Rule>
  </Style>
</Map>"""


def make_map(datasource, xml):
    """A 256 px map of `xml` with one layer of `datasource`."""
    m = mapnik.Map(TILE, TILE)
    mapnik.load_map_from_string(m, xml)
    layer = mapnik.Layer("places", "epsg:3857")
    layer.datasource = datasource
    layer.styles.append("places")
    m.layers.append(layer)
    return m


def available_faces():
    """FACES that Mapnik found in FONT_DIRS (a missing face would fail the render)."""
    for d in FONT_DIRS:
        if os.path.isdir(d):
            mapnik.register_fonts(d)
    known = set(mapnik.FontEngine.face_names())
    faces = [f for f in FACES if f in known]
    if not faces:
        sys.exit("render_places.py: none of the Noto faces is installed (fonts-noto-core, fonts-noto-cjk)")
    return faces


def parse_tile(text):
    """(z, x, y) of "z/x/y"; exits with a message when it is not a tile."""
    try:
        z, x, y = (int(v) for v in text.split("/"))
    except ValueError:
        sys.exit(f"render_places.py: not a tile: {text}")
    if not (0 <= z <= 24 and 0 <= x < (1 << z) and 0 <= y < (1 << z)):
        sys.exit(f"render_places.py: not a tile: {text}")
    return z, x, y


def emit(obj):
    print(json.dumps(obj, ensure_ascii=False), flush=True)


def main():
    parser = argparse.ArgumentParser(description="Render labelled place tiles with Mapnik and time them.")
    parser.add_argument("places", help="places TSV: x, y, name, population (EPSG:3857 metres, priority order)")
    parser.add_argument("tiles", nargs="+", help="tiles as z/x/y")
    parser.add_argument("--placements", metavar="LIST",
                        help="try these label positions in turn, e.g. E,W,S,N (markerd's default order); "
                             "default: right of the circle only, as the issue's reference tiles")
    parser.add_argument("--warmup", default="14/8299/5636", metavar="Z/X/Y",
                        help="the tile rendered once, untimed, before the others (default %(default)s, in Paris)")
    parser.add_argument("--png-dir", help="write tiles to DIR/mapnik-z-x-y.png (all, or those given with --save)")
    parser.add_argument("--save", action="append", default=[], metavar="Z/X/Y",
                        help="with --png-dir: write only this tile (repeatable)")
    args = parser.parse_args()
    tiles = [parse_tile(t) for t in args.tiles]
    mapnik.logger.set_severity(mapnik.severity_type.Error)
    xml = map_xml(available_faces(), args.placements)
    start = time.perf_counter()
    # The CSV plugin parses and indexes the whole file here, before any render.
    datasource = mapnik.Datasource(type="csv", file=os.path.abspath(args.places), separator="\t", quote='"')
    envelope = datasource.envelope()
    emit({"event": "loaded", "seconds": time.perf_counter() - start,
          "envelope": [envelope.minx, envelope.miny, envelope.maxx, envelope.maxy]})
    # One untimed render of a small tile: Mapnik opens its font faces on first use.
    warmup = make_map(datasource, xml)
    warmup.zoom_to_box(mapnik.Box2d(*tile_bounds(*parse_tile(args.warmup))))
    mapnik.render(warmup, mapnik.Image(TILE, TILE))
    for z, x, y in tiles:
        m = make_map(datasource, xml)
        m.zoom_to_box(mapnik.Box2d(*tile_bounds(z, x, y)))
        image = mapnik.Image(TILE, TILE)
        name = f"{z}/{x}/{y}"
        emit({"event": "start", "tile": name})
        t0 = time.perf_counter()
        mapnik.render(m, image)
        seconds = time.perf_counter() - t0
        emit({"event": "tile", "tile": name, "seconds": seconds})
        if args.png_dir and (not args.save or name in args.save):
            os.makedirs(args.png_dir, exist_ok=True)
            image.save(os.path.join(args.png_dir, f"mapnik-{z}-{x}-{y}.png"), "png")


if __name__ == "__main__":
    main()
