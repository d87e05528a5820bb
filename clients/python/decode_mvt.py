#!/usr/bin/env python3
"""Decodes a Mapbox Vector Tile (spec 2.1) independently of markerd, for the Swift tests.

    python3 clients/python/decode_mvt.py TILE.mvt      prints JSON: {"decoder": ..., "layers": {...}}

Uses PyPI's mapbox-vector-tile when it is installed (y down, as in the tile), otherwise a small
protobuf wire-format reader written here from the spec (no generated code). Each layer:
{"extent": n, "version": n, "features": [{"id": n|null, "type": 1, "geometry": [[x, y], ...],
"properties": {...}}]}.
"""
import json
import struct
import sys


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def _fields(buf):
    """Yields (field number, wire type, value) of one message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v = buf[i:i + 8]; i += 8
        elif wt == 2:
            n, i = _varint(buf, i)
            v = buf[i:i + n]; i += n
        elif wt == 5:
            v = buf[i:i + 4]; i += 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield num, wt, v


def _packed(v):
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _unzig(n):
    return (n >> 1) ^ -(n & 1)


def _value(buf):
    for num, wt, v in _fields(buf):
        if num == 1: return v.decode("utf-8")
        if num == 2: return struct.unpack("<f", v)[0]
        if num == 3: return struct.unpack("<d", v)[0]
        if num == 4: return v - (1 << 64) if v >= 1 << 63 else v
        if num == 5: return v
        if num == 6: return _unzig(v)
        if num == 7: return bool(v)
    return None


def _points(cmds):
    pts, i, x, y = [], 0, 0, 0
    while i < len(cmds):
        cmd, count = cmds[i] & 7, cmds[i] >> 3
        i += 1
        if cmd == 7:
            continue
        for _ in range(count):
            x += _unzig(cmds[i]); y += _unzig(cmds[i + 1]); i += 2
            pts.append([x, y])
    return pts


def decode_builtin(data):
    layers = {}
    for num, wt, lbuf in _fields(data):
        if num != 3:
            continue
        name, version, extent, keys, values, raw = None, 1, 4096, [], [], []
        for n, w, v in _fields(lbuf):
            if n == 1: name = v.decode("utf-8")
            elif n == 15: version = v
            elif n == 5: extent = v
            elif n == 3: keys.append(v.decode("utf-8"))
            elif n == 4: values.append(_value(v))
            elif n == 2: raw.append(v)
        feats = []
        for fbuf in raw:
            fid, ftype, tags, geom = None, 0, [], []
            for n, w, v in _fields(fbuf):
                if n == 1: fid = v
                elif n == 3: ftype = v
                elif n == 2: tags = _packed(v) if w == 2 else tags + [v]
                elif n == 4: geom = _packed(v) if w == 2 else geom + [v]
            props = {keys[tags[j]]: values[tags[j + 1]] for j in range(0, len(tags) - 1, 2)}
            feats.append({"id": fid, "type": ftype, "geometry": _points(geom), "properties": props})
        layers[name] = {"extent": extent, "version": version, "features": feats}
    return layers


def decode_mapbox(data):
    import mapbox_vector_tile
    tile = mapbox_vector_tile.decode(data, default_options={"y_coord_down": True})
    layers = {}
    for name, layer in tile.items():
        feats = []
        for f in layer["features"]:
            g = f["geometry"]
            coords = [g["coordinates"]] if g["type"] == "Point" else g["coordinates"]
            feats.append({"id": f.get("id"), "type": 1 if g["type"] in ("Point", "MultiPoint") else 0,
                          "geometry": [list(c) for c in coords], "properties": f["properties"]})
        layers[name] = {"extent": layer["extent"], "version": layer["version"], "features": feats}
    return layers


def main():
    data = open(sys.argv[1], "rb").read()
    force_builtin = len(sys.argv) > 2 and sys.argv[2] == "--builtin"
    try:
        if force_builtin:
            raise ImportError
        layers, decoder = decode_mapbox(data), "mapbox-vector-tile"
    except ImportError:
        layers, decoder = decode_builtin(data), "builtin"
    json.dump({"decoder": decoder, "layers": layers}, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
