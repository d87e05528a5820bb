#!/usr/bin/env python3
"""Browser test of markerd's viewer (`/` of the HTTP gateway): run by `make test`.

    python3 scripts/viewer-test.py --markerd .build/test/release/markerd \\
        [--markerctl PATH] [--out DIR] [--basemap-dir DIR]

Starts a real markerd (ephemeral, free loopback ports, `--basemap-dir`, Leaflet from Debian's
libjs-leaflet), loads with markerctl
  - `places`: the 34,006 real places of Tests/Fixtures/places/cities.tsv, TILED and labelled
    (`layers create places --labels name --label-priority population`),
  - `dots`: 3,000 synthetic markers (scripts/gen-markers.py), TILED in 512 px tiles, unlabelled,
  - `capitals`: the 300 most populous places, NATIVE (`--min-marker-count 100000`): live markers,
  - `clusters`: the same places as `places`, clustered into count bubbles in the tiles (`--clusters`),
takes headless-Chromium screenshots (1024x768; the map is x 300..1023, the panel left of it) and
checks what a person would see, pixel by pixel:
  - sea in the sea colour where the sea is (mid-Atlantic, Indian Ocean, Bay of Biscay...),
  - land in the land colour over continents (Greenland, Taymyr, the Paris basin), on both sides
    of the antimeridian (Chukotka and Alaska),
  - the places' red pins at Paris and other cities at z10/z5, their dark label text beside them,
  - cluster bubbles where the places crowd,
  - every live marker of `capitals` in view drawn as a circle in its colour (red) at its place,
    and red nowhere else,
  - the hit-test panel listing Paris with its attributes, the stats and the tile template,
  - no failed request: /metrics counts no 4xx/5xx on any route, and nothing in the browser's
    console (a JS error, a failed load);
then restarts markerd without a basemap and checks the viewer says the basemap is missing.
Screenshots are saved to DIR (default .build/viewer-test) and the directory is printed.
Exit status 0 when every check passes. Needs chromium and libjs-leaflet (Debian) and the basemap
(scripts/build-basemap.py); scripts/install-deps.sh --test installs them.
"""
import argparse
import json
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
WIDTH, HEIGHT, PANEL = 1024, 768, 300           # window; the map fills x >= PANEL
MAP_CX, MAP_CY = PANEL + (WIDTH - PANEL) / 2, HEIGHT / 2
SEA, LAND = (0x9C, 0xC3, 0xE0), (0xF2, 0xEF, 0xE6)  # ViewerPage's SEA and LAND
PARIS = (48.85341, 2.3488)                          # geonameid 2988507 in cities.tsv

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


# ---------------------------------------------------------------- processes and HTTP

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class Markerd:
    def __init__(self, binary, out, name, extra):
        self.http = f"http://127.0.0.1:{free_port()}"
        self.rpc = f"tcp://127.0.0.1:{free_port()}"
        self.log = open(os.path.join(out, f"{name}.log"), "w")
        self.proc = subprocess.Popen([binary, "--ephemeral", "--listen", self.rpc, "--http", self.http[len("http://"):]] + extra,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                if fetch(self.http + "/healthz", timeout=2) == "ok\n":
                    return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit(f"viewer-test: markerd did not come up (see {self.log.name})")
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def markerctl(binary, url, *args):
    r = subprocess.run([binary, "--url", url, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"viewer-test: markerctl {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def chromium(browser, url, out, name, dump_dom=False, console_expected=False):
    """Screenshot (or the DOM) of `url` after the page settled (virtual time budget). The viewer polls
    (`&live=poll`): virtual time does not advance while a fetch is pending, and its event stream
    (`/layers/{layer}/events`) always is."""
    url += "&live=poll"
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
            "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0",
            f"--user-data-dir={os.path.join(out, 'chromium-profile')}",
            "--virtual-time-budget=10000", f"--window-size={WIDTH},{HEIGHT}"]
    png = os.path.join(out, name + ".png")
    args += ["--dump-dom"] if dump_dom else [f"--screenshot={png}"]
    r = subprocess.run(args + [url], capture_output=True, text=True, timeout=120)
    with open(os.path.join(out, name + ".chromium.log"), "w") as f:
        f.write(r.stderr)
    # The page logs nothing itself: any console line is a JS error, a failed load or a warning.
    errors = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
    if not console_expected:  # (a page whose requests are meant to fail logs them)
        check(not errors, f"{name}: nothing in the browser's console" + (f" ({errors[0][:200]})" if errors else ""))
    if dump_dom:
        return r.stdout
    if not os.path.exists(png):
        sys.exit(f"viewer-test: no screenshot {png} (Chromium said: {r.stderr[-2000:]})")
    return Image(png)


# ---------------------------------------------------------------- PNG and pixels

class Image:
    """An 8-bit RGB(A) PNG, decoded in pure Python (Chromium's screenshots are such)."""

    def __init__(self, path):
        self.path = path
        data = open(path, "rb").read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
        pos, idat = 8, []
        while pos < len(data):
            n, kind = struct.unpack(">I4s", data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + n]
            if kind == b"IHDR":
                self.w, self.h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
                assert depth == 8 and ctype in (2, 6) and interlace == 0, f"{path}: PNG depth {depth} type {ctype}"
                bpp = 3 if ctype == 2 else 4
            elif kind == b"IDAT":
                idat.append(body)
            pos += 12 + n
        raw, stride = zlib.decompress(b"".join(idat)), self.w * bpp
        prev, rows = bytearray(stride), []
        for y in range(self.h):
            f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
            if f == 1:
                for i in range(bpp, stride):
                    line[i] = (line[i] + line[i - bpp]) & 255
            elif f == 2:
                for i in range(stride):
                    line[i] = (line[i] + prev[i]) & 255
            elif f == 3:
                for i in range(stride):
                    line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
            elif f == 4:
                for i in range(stride):
                    a, b = (line[i - bpp] if i >= bpp else 0), prev[i]
                    c = prev[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            rows.append(line)
            prev = line
        self.px = [[tuple(r[i:i + 3]) for i in range(0, stride, bpp)] for r in rows]

    def at(self, x, y):
        return self.px[int(round(y))][int(round(x))]

    def block(self, x, y, r):
        """The pixels of the (2r+1)^2 square around (x, y), inside the map."""
        x, y = int(round(x)), int(round(y))
        return [self.px[j][i] for j in range(max(0, y - r), min(self.h, y + r + 1))
                for i in range(max(PANEL, x - r), min(self.w, x + r + 1))]


def near(c, want, tol=6):
    return all(abs(a - b) <= tol for a, b in zip(c, want))


def is_red(c):   # markerd's default pin fill (0xFFFF0000), antialiased edges aside
    return c[0] > 200 and c[1] < 60 and c[2] < 60


def is_bubble(c):  # ClusterBubble.fill: blue, orange or red by count band
    return any(near(c, b, 12) for b in ((0x1E, 0x88, 0xE5), (0xFB, 0x8C, 0x00), (0xE5, 0x39, 0x35)))


def is_text(c):  # label text: dark grey to black
    return max(c) < 90


def world(lat, lon, z):
    s = 256 * 2 ** z
    phi = math.radians(max(-85.05112878, min(85.05112878, lat)))
    return (lon + 180) / 360 * s, (1 - math.log(math.tan(phi) + 1 / math.cos(phi)) / math.pi) / 2 * s


def screen(view, lat, lon):
    """Where (lat, lon) is in a screenshot of `view` (lat, lon, z at the map's centre)."""
    cx, cy = world(view[0], view[1], view[2])
    x, y = world(lat, lon, view[2])
    return MAP_CX + x - cx, MAP_CY + y - cy


def unscreen(view, x, y):
    """The (lat, lon) at pixel (x, y) of a screenshot of `view`."""
    cx, cy = world(view[0], view[1], view[2])
    s = 256 * 2 ** view[2]
    wx, wy = cx + x - MAP_CX, cy + y - MAP_CY
    return round(math.degrees(math.atan(math.sinh(math.pi * (1 - 2 * wy / s)))), 6), round(wx / s * 360 - 180, 6)


def in_map(x, y, margin=0):
    return PANEL + margin <= x < WIDTH - margin and margin <= y < HEIGHT - margin


def share(pixels, want, tol=6):
    return sum(near(p, want, tol) for p in pixels) / max(1, len(pixels))


# ---------------------------------------------------------------- data

def places():
    rows = []
    with open(os.path.join(ROOT, "Tests/Fixtures/places/cities.tsv"), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            r = dict(zip(header, line.rstrip("\n").split("\t")))
            rows.append((r["geonameid"], float(r["latitude"]), float(r["longitude"]), r["name"], int(r["population"])))
    return rows


def write_geojson(path, rows):
    features = [{"type": "Feature", "id": gid, "geometry": {"type": "Point", "coordinates": [lon, lat]},
                 "properties": {"name": name, "population": pop}} for gid, lat, lon, name, pop in rows]
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"type": "FeatureCollection", "features": features}, f, ensure_ascii=False)


def main():
    parser = argparse.ArgumentParser(description="markerd viewer browser test")
    parser.add_argument("--markerd", required=True)
    parser.add_argument("--markerctl", help="default: markerctl beside --markerd")
    parser.add_argument("--out", default=os.path.join(ROOT, ".build", "viewer-test"))
    parser.add_argument("--basemap-dir", default=os.path.join(ROOT, ".build", "basemap"))
    args = parser.parse_args()
    ctl = args.markerctl or os.path.join(os.path.dirname(args.markerd), "markerctl")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        sys.exit("viewer-test: chromium not found (scripts/install-deps.sh --test installs it)")
    if not os.path.exists(os.path.join(args.basemap_dir, "countries-z3.geojson")):
        sys.exit(f"viewer-test: no basemap in {args.basemap_dir} (python3 scripts/build-basemap.py)")
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    started = time.monotonic()

    all_places = places()
    write_geojson(os.path.join(out, "places.geojson"), all_places)
    capitals = sorted(all_places, key=lambda p: -p[4])[:300]
    write_geojson(os.path.join(out, "capitals.geojson"), capitals)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts/gen-markers.py"), "--count", "3000", "--seed", "7",
                    "--cities", "40", "--out", os.path.join(out, "dots.csv")], check=True, capture_output=True)

    server = Markerd(args.markerd, out, "markerd", ["--basemap-dir", args.basemap_dir])
    try:
        markerctl(ctl, server.rpc, "layers", "create", "places", "--labels", "name", "--label-priority", "population")
        markerctl(ctl, server.rpc, "load", "places", os.path.join(out, "places.geojson"))
        markerctl(ctl, server.rpc, "layers", "create", "clusters", "--clusters")
        markerctl(ctl, server.rpc, "load", "clusters", os.path.join(out, "places.geojson"))
        markerctl(ctl, server.rpc, "layers", "create", "dots", "--tile-size", "512")
        markerctl(ctl, server.rpc, "load", "dots", os.path.join(out, "dots.csv"))
        markerctl(ctl, server.rpc, "layers", "create", "capitals", "--min-marker-count", "100000")
        markerctl(ctl, server.rpc, "load", "capitals", os.path.join(out, "capitals.geojson"))
        layers = {l["id"]: l for l in json.loads(fetch(server.http + "/layers.json"))["layers"]}
        check(layers["places"]["mode"] == "tiled" and layers["places"]["markerCount"] == len(all_places)
              and layers["places"]["labels"] and layers["places"]["labelAttribute"] == "name"
              and layers["clusters"]["clusters"] and not layers["places"]["clusters"]
              and layers["capitals"]["mode"] == "native", f"layers loaded: {sorted(layers)}")

        def view_url(layer, v, hit=None):
            return f"{server.http}/#layer={layer}&z={v[2]}&lat={v[0]}&lon={v[1]}" + (f"&hit={hit[0]},{hit[1]}" if hit else "")

        # World, z2: sea and land in their colours, pins on land.
        v = (20, 0, 2)
        img = chromium(browser, view_url("places", v), out, "places-world-z2")
        for name, lat, lon in [("mid-Atlantic", 30, -40), ("South Atlantic", -25, -15), ("Indian Ocean", -25, 80)]:
            x, y = screen(v, lat, lon)
            check(share(img.block(x, y, 4), SEA) >= 0.9, f"world z2: sea colour in the {name} at ({x:.0f}, {y:.0f})")
        for name, lat, lon in [("Greenland", 74, -40), ("the Taymyr Peninsula", 75, 100)]:
            x, y = screen(v, lat, lon)
            check(share(img.block(x, y, 4), LAND) >= 0.6, f"world z2: land colour over {name} at ({x:.0f}, {y:.0f})")
        red = sum(is_red(p) for row in img.px for p in row[PANEL:])
        check(red > 2000, f"world z2: the places' pins are drawn ({red} red pixels)")

        # Europe, z5: labelled pins at the big cities, sea between them.
        v = (48, 8, 5)
        img = chromium(browser, view_url("places", v), out, "places-europe-z5")
        for name, lat, lon in [("Bay of Biscay", 45.5, -6.0), ("North Sea", 56.0, 3.0)]:
            x, y = screen(v, lat, lon)
            check(share(img.block(x, y, 3), SEA) >= 0.9, f"Europe z5: sea colour in the {name} at ({x:.0f}, {y:.0f})")
        for name, lat, lon in [("Paris", 48.85341, 2.3488), ("Berlin", 52.52437, 13.41053), ("Madrid", 40.4165, -3.70256)]:
            x, y = screen(v, lat, lon)
            pins = sum(is_red(p) for p in img.block(x, y - 16, 16))
            check(pins >= 40, f"Europe z5: a red pin at {name} ({x:.0f}, {y:.0f}): {pins} red pixels")

        # Paris, z10: the pin at Paris with its label beside it, land all around.
        v = (PARIS[0], PARIS[1], 10)
        img = chromium(browser, view_url("places", v), out, "places-paris-z10")
        x, y = screen(v, *PARIS)
        pins = sum(is_red(p) for p in img.block(x, y - 16, 16))
        check(pins >= 100, f"Paris z10: the pin of Paris at ({x:.0f}, {y:.0f}): {pins} red pixels")
        text = sum(is_text(p) for p in img.block(x, y - 10, 90))
        check(text >= 150, f"Paris z10: label text around Paris: {text} dark pixels")
        land = share([p for row in img.px for p in row[PANEL:]], LAND, 4)
        check(land >= 0.5, f"Paris z10: land colour under the markers ({land:.0%} of the map)")
        check(share([p for row in img.px for p in row[PANEL:]], SEA) < 0.01, "Paris z10: no sea colour inland")

        # A click on Paris's label (right of its pin, which the pins of places further south
        # cover at z10): the panel lists Paris first, with its attributes (README's picture too).
        label = unscreen(v, x + 42, y - 24)
        dom = chromium(browser, view_url("places", v, label), out, "places-paris-z10-hit", dump_dom=True)
        hits = re.search(r'<pre id="hits">(.*?)</pre>', dom, re.S)
        hits = hits.group(1).split("\n") if hits else []
        check(hits[1:4] == ["2988507 (tiled, on its label)  48.85341, 2.34880", "  name: Paris", "  population: 2138551"],
              f"hit-test on Paris's pin lists Paris first with its attributes: {hits[:4]}")
        check(f'value="{server.http}/tiles/places/256/{{z}}/{{x}}/{{y}}.png"' in dom, "the panel shows the tile template")
        check("<td>markers</td><td>34006</td>" in dom and "<td>mode</td><td>tiled</td>" in dom
              and "<td>labels</td><td>on (name)</td>" in dom, "the panel shows the layer's stats")
        check("basemap: Natural Earth countries (177)" in dom, "the panel names the basemap")
        chromium(browser, view_url("places", v, label), out, "places-paris-z10-hit")

        # Live markers of the native layer, Europe z5: a circle in the marker's colour (the
        # default pin's red) at each, and red nowhere else.
        v = (48, 8, 5)
        img = chromium(browser, view_url("capitals", v), out, "capitals-europe-z5")
        shown = [(screen(v, lat, lon), name) for _, lat, lon, name, _ in capitals]
        shown = [(p, name) for p, name in shown if in_map(*p, margin=8)]
        missing = [name for (x, y), name in shown if sum(is_red(p) for p in img.block(x, y, 1)) < 5]
        check(len(shown) >= 10 and not missing, f"Europe z5: a live marker at each of the {len(shown)} capitals in view"
              + (f"; missing at {missing[:5]}" if missing else ""))
        stray = sum(1 for y in range(img.h) for x in range(PANEL, img.w) if is_red(img.px[y][x])
                    and not any(abs(x - px) <= 8 and abs(y - py) <= 8 for (px, py), _ in shown))
        check(stray == 0, f"Europe z5: no live-marker pixels away from the data ({stray})")

        # Across the antimeridian the basemap repeats like the tiles: land on both sides.
        v = (62, 180, 3)
        img = chromium(browser, view_url("capitals", v), out, "capitals-bering-z3")
        for name, lat, lon, colour in [("Chukotka", 67, 172, LAND), ("Alaska", 65, -152, LAND), ("the Bering Sea", 58, -178, SEA)]:
            x, y = screen(v, lat, lon if lon > 0 else lon + 360)
            check(share(img.block(x, y, 4), colour) >= 0.9,
                  f"Bering z3: {'land' if colour == LAND else 'sea'} colour over {name} at ({x:.0f}, {y:.0f})")

        # The clustered layer at z2: count bubbles where the places crowd (western Europe, the
        # Ganges plain, eastern China), none in the sea.
        v = (20, 0, 2)
        img = chromium(browser, view_url("clusters", v), out, "clusters-world-z2")
        for name, lat, lon in [("western Europe", 49, 5), ("northern India", 26, 80), ("eastern China", 32, 115)]:
            x, y = screen(v, lat, lon)
            n = sum(is_bubble(p) for p in img.block(x, y, 30))
            check(n >= 200, f"clusters z2: cluster bubbles over {name} at ({x:.0f}, {y:.0f}): {n} pixels")
        for name, lat, lon in [("mid-Atlantic", 30, -40), ("South Atlantic", -25, -15), ("Indian Ocean", -25, 80)]:
            x, y = screen(v, lat, lon)
            check(share(img.block(x, y, 4), SEA) >= 0.9, f"clusters z2: sea colour in the {name} at ({x:.0f}, {y:.0f})")

        # The unlabelled tiled layer of 512 px tiles at z2, and at z0 (the z0 tile drawn at half size).
        for z, least in [(2, 1000), (0, 200)]:
            img = chromium(browser, view_url("dots", (20, 0, z)), out, f"dots-world-z{z}")
            red = sum(is_red(p) for row in img.px for p in row[PANEL:])
            check(red > least, f"dots z{z}, 512 px tiles: markers drawn ({red} red pixels)")

        metrics = fetch(server.http + "/metrics")
        with open(os.path.join(out, "metrics.txt"), "w") as f:
            f.write(metrics)
        counts = [(route, int(status), int(n)) for route, status, n in
                  re.findall(r'markerd_http_requests_total\{route="([^"]+)",status="(\d+)"\} (\d+)', metrics)]
        failed = [(r, s, n) for r, s, n in counts if s >= 400]
        check(not failed, f"no failed HTTP request: {failed or 'none'}")
        served = {r: sum(n for rr, s, n in counts if rr == r and s < 400) for r, _, _ in counts}
        for route in ["viewer", "viewer_leaflet", "viewer_basemap", "layers", "tile", "viewport", "hittest"]:
            check(served.get(route, 0) > 0, f"the page used /{route}: {served.get(route, 0)} requests")
    finally:
        server.stop()

    # Without a basemap the viewer still works and says so.
    bare = Markerd(args.markerd, out, "markerd-no-basemap", [])
    try:
        markerctl(ctl, bare.rpc, "layers", "create", "capitals", "--min-marker-count", "100000")
        markerctl(ctl, bare.rpc, "load", "capitals", os.path.join(out, "capitals.geojson"))
        dom = chromium(browser, f"{bare.http}/#layer=capitals&z=5&lat=48&lon=8", out, "no-basemap", dump_dom=True)
        check("basemap missing: 404 no basemap" in dom and "basemap missing (markerd --basemap-dir)" in dom,
              "without --basemap-dir the viewer says the basemap is missing")
        check("<td>live drawn</td><td>" in dom, "without a basemap the viewer still shows the layer")
    finally:
        bare.stop()

    # A private layer through a signed prefix (markerd with tokens): the page shows it without a token, and says
    # when the prefix has expired.
    tokens = os.path.join(out, "tokens")
    r = subprocess.run([args.markerd, "token", "add", "backend", "--scopes", "read,write,admin", "--layers", "*",
                        "--auth-file", tokens], capture_output=True, text=True, check=True)
    token = r.stdout.strip().splitlines()[-1]
    private = Markerd(args.markerd, out, "markerd-auth", ["--basemap-dir", args.basemap_dir, "--auth-file", tokens])
    try:
        env = dict(os.environ, MARKERD_TOKEN=token)
        def ctl_auth(*a):
            return subprocess.run([ctl, "--url", private.rpc, *a], capture_output=True, text=True, check=True, env=env).stdout
        ctl_auth("layers", "create", "places")
        ctl_auth("load", "places", os.path.join(out, "places.geojson"))
        template = ctl_auth("sign-url", "places").strip()
        m = re.match(r"^(/t/[0-9]+\.[A-Za-z0-9_-]+)/tiles/places/", template)
        check(m is not None, f"sign-url prints a signed template: {template}")
        prefix = m.group(1) if m else "/t/0.x"
        check(json.loads(fetch(private.http + "/layers.json"))["layers"] == [], "a private layer is not listed without a token")
        v = (48, 8, 5)
        img = chromium(browser, f"{private.http}/#layer=places&z={v[2]}&lat={v[0]}&lon={v[1]}&signed={prefix}", out, "signed-europe-z5")
        x, y = screen(v, *PARIS)
        red = sum(is_red(p) for p in img.block(x, y - 16, 16))
        check(red >= 40, f"signed prefix: the private layer's pin at Paris ({x:.0f}, {y:.0f}): {red} red pixels")
        expiry, signature = prefix[3:].split(".")
        short = ctl_auth("sign-url", "places", "--ttl", "1").strip().split("/tiles/")[0]
        time.sleep(max(0.0, int(short[3:].split(".")[0]) + 1.1 - time.time()))  # until it has expired
        for name, stale in [("changed", f"/t/{int(expiry) + 1}.{signature}"), ("expired", short)]:
            dom = chromium(browser, f"{private.http}/#layer=places&z=5&lat=48&lon=8&signed={stale}", out, f"signed-{name}",
                           dump_dom=True, console_expected=True)
            check("viewport: 403" in dom, f"signed prefix {name}: the page says 403")
    finally:
        private.stop()

    print(f"viewer-test: screenshots in {out} ({time.monotonic() - started:.0f} s)")
    if failures:
        print(f"viewer-test: {len(failures)} check(s) failed")
        sys.exit(1)
    print("viewer-test: OK")


if __name__ == "__main__":
    main()
