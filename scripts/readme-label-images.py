#!/usr/bin/env python3
# Renders the README's labelled tiles into DIR (default /tmp/readme-img; copy them to docs/images): markerd
# (.build/release/markerd, `make release`) with the 34,006 places of Tests/Fixtures/places, labels from `name`
# (Paris) or the local-script name (Japan, Arabia), priority from `population`, 24 px pins; and Mapnik 3.1
# (Debian python3-mapnik) on the same places. Needs the reference client's packages (scripts/install-deps.sh --test).
#   python3 scripts/readme-label-images.py [DIR]
import math, subprocess, sys, time, os
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/readme-img"
os.makedirs(OUT, exist_ok=True)
sys.path.insert(0, os.path.join(ROOT, "clients/python"))
from markerd_client import MarkerdClient, load_protos
pb = load_protos()
port = 7611
proc = subprocess.Popen([os.path.join(ROOT, ".build/release/markerd"), "--ephemeral", "--listen", f"tcp://127.0.0.1:{port}"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1.5)  # markerd starts listening well within this
c = MarkerdClient(f"tcp://127.0.0.1:{port}")
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(ROOT, "Tests/Fixtures/places/cities.tsv"), encoding="utf-8")]
hdr, rows = rows[0], rows[1:]
ix = {h: i for i, h in enumerate(hdr)}
def layer(lid, text_attr):
    req = pb.CreateLayerRequest(layer_id=lid)
    req.options.labels.enabled = True
    req.options.labels.text_attribute = text_attr
    req.options.labels.priority_attribute = "population"
    c.call("CreateLayer", req, pb.CreateLayerResponse, idempotency_key="create-" + lid)
    ms = []
    for r in rows:
        name = r[ix["local_name"]] if text_attr == "local_name" and r[ix["local_name"]] else r[ix["name"]]
        m = pb.Marker(id=r[ix["geonameid"]])
        m.position.latitude = float(r[ix["latitude"]]); m.position.longitude = float(r[ix["longitude"]])
        m.pin.scale = 0.5
        m.attributes["name"] = r[ix["name"]]; m.attributes["local_name"] = name
        m.attributes["population"] = r[ix["population"]]
        ms.append(m)
    for i in range(0, len(ms), 20000):
        c.upsert_markers(lid, ms[i:i + 20000])
layer("places", "name")
layer("local", "local_name")
def tile(lid, z, x, y, d=1, out=None):
    r = c.call("GetTile", pb.GetTileRequest(layer_id=lid, z=z, x=x, y=y, density=d), pb.GetTileResponse)
    open(out, "wb").write(r.png)
tile("places", 10, 518, 352, out=OUT + "/markerd-z10-paris.png")
tile("local", 5, 28, 12, d=2, out=OUT + "/markerd-z5-japan@2x.png")
tile("local", 5, 19, 13, d=2, out=OUT + "/markerd-z5-cairo@2x.png")
tile("local", 5, 22, 13, d=2, out=OUT + "/markerd-z5-delhi@2x.png")
proc.terminate()
# Mapnik input: x, y (EPSG:3857 m), name, population; highest population first.
R = 6378137.0
pl = sorted(rows, key=lambda r: -int(r[ix["population"]] or 0))
with open(OUT + "/places.tsv", "w", encoding="utf-8") as f:
    f.write("x\ty\tname\tpopulation\n")
    for r in pl:
        lat, lon = float(r[ix["latitude"]]), float(r[ix["longitude"]])
        x = math.radians(lon) * R; y = math.log(math.tan(math.pi / 4 + math.radians(max(-85, min(85, lat))) / 2)) * R
        f.write(f"{x}\t{y}\t{r[ix['name']]}\t{r[ix['population']]}\n")
subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "Benchmarks/mapnik/render_places.py"), OUT + "/places.tsv",
                "10/518/352", "--png-dir", OUT], check=True)
