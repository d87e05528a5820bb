#!/usr/bin/env bash
# Screenshot test of markerd's viewer page (served at / by the HTTP gateway, `markerd --http`).
#
#   scripts/viewer-screenshot.sh [OUT_DIR]      # default OUT_DIR=/tmp/markerd-viewer
#
# Starts an ephemeral markerd on free ports, loads markers with markerctl (a TILED layer
# "cities" of 3000 markers and a NATIVE layer "towns" of 400), takes headless-chromium
# screenshots of the viewer for each layer, and checks that
#   - the page asked the gateway for layers, the viewport and (for the tiled layer) raster tiles
#     (markerd_http_requests_total in /metrics),
#   - the screenshots are not blank (enough pixels differ from the background colour).
# Exits 0 when every check passes. Needs Debian's chromium (apt-get install -y chromium) and
# python3; builds markerd/markerctl (debug) unless MARKERD_BIN_DIR points at built binaries.
# Not part of `make test` (chromium is large); CI can run it in a job that installs chromium:
#   apt-get install -y chromium && swift build && scripts/viewer-screenshot.sh "$ARTIFACTS"
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-/tmp/markerd-viewer}
mkdir -p "$OUT"
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || { echo "viewer-screenshot: chromium not found (apt-get install -y chromium)" >&2; exit 2; }

if [ -z "${MARKERD_BIN_DIR:-}" ]; then
    swift build --product markerd >/dev/null
    swift build --product markerctl >/dev/null
    MARKERD_BIN_DIR=$(swift build --show-bin-path)
fi
MARKERD=$MARKERD_BIN_DIR/markerd
MARKERCTL=$MARKERD_BIN_DIR/markerctl

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
RPC_PORT=$(free_port)
HTTP_PORT=$(free_port)
BASE=http://127.0.0.1:$HTTP_PORT
export MARKERD_URL=tcp://127.0.0.1:$RPC_PORT

"$MARKERD" --ephemeral --listen "$MARKERD_URL" --http "127.0.0.1:$HTTP_PORT" >"$OUT/markerd.log" 2>&1 &
MARKERD_PID=$!
cleanup() { kill "$MARKERD_PID" 2>/dev/null || true; wait "$MARKERD_PID" 2>/dev/null || true; }
trap cleanup EXIT

fetch() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }
for _ in $(seq 1 100); do
    if fetch "$BASE/healthz" >/dev/null 2>&1; then break; fi
    sleep 0.1
done
fetch "$BASE/healthz" >/dev/null || { echo "markerd did not come up:"; cat "$OUT/markerd.log"; exit 1; }

python3 scripts/gen-markers.py --count 3000 --seed 7 --cities 40 --out "$OUT/cities.csv" 2>/dev/null
python3 scripts/gen-markers.py --count 400 --seed 8 --cities 20 --out "$OUT/towns.csv" 2>/dev/null
"$MARKERCTL" layers create cities >/dev/null
"$MARKERCTL" load cities "$OUT/cities.csv" 2>/dev/null
"$MARKERCTL" layers create towns --min-marker-count 100000 >/dev/null
"$MARKERCTL" load towns "$OUT/towns.csv" 2>/dev/null
echo "layers: $(fetch "$BASE/layers.json")"

# Hit-test on load at the first town (the side panel lists the hit).
HIT=$(sed -n 2p "$OUT/towns.csv" | cut -d, -f2,3)
shot() {  # layer, file
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
        --virtual-time-budget=8000 --window-size=1024,768 --screenshot="$2" \
        "$BASE/#layer=$1&z=1.6&lat=25&lon=10&hit=$HIT" >"$OUT/chromium-$1.log" 2>&1 || true
    [ -s "$2" ] || { echo "FAIL: no screenshot $2 (see $OUT/chromium-$1.log)"; exit 1; }
}
shot cities "$OUT/viewer-cities.png"
shot towns "$OUT/viewer-towns.png"

fetch "$BASE/metrics" >"$OUT/metrics.txt"
grep '^markerd_http_requests_total' "$OUT/metrics.txt" || true

python3 - "$OUT" <<'EOF'
import re, struct, sys, zlib
out = sys.argv[1]
metrics = open(f"{out}/metrics.txt").read()
def requests(route):
    return sum(int(n) for n in re.findall(r'markerd_http_requests_total\{route="%s",status="\d+"\} (\d+)' % route, metrics))
failures = []
for route, least in [("viewer", 2), ("layers", 2), ("viewport", 2), ("tile", 4), ("hittest", 2)]:
    n = requests(route)
    print(f"{route}: {n} requests")
    if n < least:
        failures.append(f"the page made {n} {route} requests, expected at least {least}")

tiles_ok = re.search(r'markerd_http_requests_total\{route="tile",status="200"\} [1-9]', metrics) is not None

def pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"unexpected PNG format depth={depth} type={ctype}"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line)); prev = line
    return [(r[i], r[i + 1], r[i + 2]) for r in rows for i in range(0, stride, bpp)], w, h

for name in ("cities", "towns"):
    px, w, h = pixels(f"{out}/viewer-{name}.png")
    counts = {}
    for p in px: counts[p] = counts.get(p, 0) + 1
    top = max(counts.values())
    differing = len(px) - top
    # red-ish marker pixels (pins are drawn #e8453c or the marker's fill colour)
    red = sum(n for (r, g, b), n in counts.items() if r > 180 and g < 120 and b < 120)
    print(f"viewer-{name}.png: {w}x{h}, {len(counts)} colours, {differing} pixels differ from the most common colour, {red} red pixels")
    if len(counts) < 20 or differing < 0.05 * len(px):
        failures.append(f"viewer-{name}.png looks blank")
    if name == "towns" and red < 200:
        failures.append("viewer-towns.png shows no markers")
    if name == "cities":
        if tiles_ok and red < 200:
            failures.append("the gateway served raster tiles but viewer-cities.png shows no markers")
        elif not tiles_ok:
            print("note: no raster tile answered 200 (this build's GetTile answers 501 until the tile renderer is merged);"
                  " the cities screenshot shows the tile grid only")

if failures:
    print("FAIL: " + "; ".join(failures)); sys.exit(1)
print("OK")
EOF
echo "screenshots: $OUT/viewer-cities.png $OUT/viewer-towns.png"
