/// The viewer served at `/` by ``TileGateway``: one HTML page with plain JavaScript, no outside
/// libraries and no network besides the gateway. Pick a layer (`/layers.json`), pan (drag) and
/// zoom (wheel, or +/-) a Web Mercator canvas that draws markerd's raster tiles (from the
/// viewport's tile template, versioned so the browser may cache them for good) and the live
/// markers (`/viewport/{layer}`); a click runs `/hittest/{layer}` and lists the hits.
///
/// The URL fragment keeps the view: `/#layer=cities&z=3.5&lat=48.1&lon=11.6`; `&hit=LAT,LON`
/// runs a hit-test there on load (for screenshots).
enum ViewerPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>markerd viewer</title>
<style>
  html, body { margin: 0; height: 100%; font: 13px system-ui, sans-serif; background: #1d2330; color: #dde3ee; }
  #app { display: flex; height: 100%; }
  #side { width: 260px; padding: 10px; box-sizing: border-box; overflow: auto; background: #252c3b; border-right: 1px solid #39425a; }
  #side h1 { font-size: 16px; margin: 0 0 8px; }
  #side select { width: 100%; margin-bottom: 8px; }
  #side pre { white-space: pre-wrap; word-break: break-all; font-size: 11px; background: #1d2330; padding: 6px; border-radius: 4px; }
  .k { color: #8b95ad; }
  #map { flex: 1; position: relative; }
  canvas { position: absolute; inset: 0; width: 100%; height: 100%; cursor: grab; }
  canvas.drag { cursor: grabbing; }
</style>
</head>
<body>
<div id="app">
  <div id="side">
    <h1>markerd viewer</h1>
    <label class="k" for="layer">layer</label>
    <select id="layer"></select>
    <div id="status"></div>
    <h1 style="margin-top:12px">hit-test</h1>
    <div class="k">click the map</div>
    <pre id="hits">-</pre>
  </div>
  <div id="map"><canvas id="c"></canvas></div>
</div>
<script>
"use strict";
const MAX_LAT = 85.05112878, TILE = 256;
const canvas = document.getElementById("c"), ctx = canvas.getContext("2d");
const layerSelect = document.getElementById("layer");
const statusEl = document.getElementById("status"), hitsEl = document.getElementById("hits");
const dpr = Math.min(3, Math.max(1, Math.round(window.devicePixelRatio || 1)));
const view = { lat: 20, lon: 0, zoom: 2 };
let pendingHit = null, layer = null, layers = [], vp = null, vpSeq = 0, hitMarkers = [], clickPoint = null;
const tiles = new Map();            // url -> {img, status}
const tileStats = { requested: 0, loaded: 0, failed: 0, lastStatus: "-" };

function worldSize(z) { return TILE * Math.pow(2, z); }
function project(lat, lon, z) {
  const s = worldSize(z), phi = Math.max(-MAX_LAT, Math.min(MAX_LAT, lat)) * Math.PI / 180;
  return { x: (lon + 180) / 360 * s, y: (1 - Math.log(Math.tan(phi) + 1 / Math.cos(phi)) / Math.PI) / 2 * s };
}
function unproject(x, y, z) {
  const s = worldSize(z), lon = x / s * 360 - 180;
  const lat = Math.atan(Math.sinh(Math.PI * (1 - 2 * y / s))) * 180 / Math.PI;
  return { lat, lon };
}
function size() { return { w: canvas.clientWidth, h: canvas.clientHeight }; }
function center() { return project(view.lat, view.lon, view.zoom); }
function screenToLatLon(px, py) {
  const { w, h } = size(), c = center();
  const ll = unproject(c.x + px - w / 2, c.y + py - h / 2, view.zoom);
  ll.lon = ((ll.lon + 540) % 360) - 180;
  return ll;
}
function clampView() {
  view.zoom = Math.max(0, Math.min(22, view.zoom));
  view.lat = Math.max(-MAX_LAT, Math.min(MAX_LAT, view.lat));
  view.lon = ((view.lon + 540) % 360) - 180;
}
function saveHash() {
  if (!layer) return;
  history.replaceState(null, "", "#layer=" + encodeURIComponent(layer) + "&z=" + view.zoom.toFixed(2) +
    "&lat=" + view.lat.toFixed(5) + "&lon=" + view.lon.toFixed(5));
}
function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  if (p.get("z")) view.zoom = parseFloat(p.get("z"));
  if (p.get("lat")) view.lat = parseFloat(p.get("lat"));
  if (p.get("lon")) view.lon = parseFloat(p.get("lon"));
  if (p.get("hit")) { const [la, lo] = p.get("hit").split(",").map(parseFloat); if (isFinite(la) && isFinite(lo)) pendingHit = { lat: la, lon: lo }; }
  clampView();
  return p.get("layer");
}

// ---- tiles ----
function tileURL(z, x, y) {
  if (!vp || vp.mode !== "tiled" || !vp.tileURLTemplate) return null;
  let t = vp.tileURLTemplate;
  const live = "/tiles/" + layer + "/";
  if (vp.tileVersion != null && t.startsWith(live)) t = live + "v" + vp.tileVersion + "/" + t.slice(live.length);
  if (dpr > 1) t = t.replace(/\.png$/, "@" + dpr + "x.png");
  return t.replace("{z}", z).replace("{x}", x).replace("{y}", y);
}
function loadTile(url) {
  const entry = { img: null, status: "loading" };
  tiles.set(url, entry);
  tileStats.requested++;
  fetch(url).then(r => {
    tileStats.lastStatus = r.status + " " + r.statusText;
    if (!r.ok) throw new Error(String(r.status));
    return r.blob();
  }).then(b => createImageBitmap(b)).then(img => {
    entry.img = img; entry.status = "ok"; tileStats.loaded++; draw();
  }).catch(() => { entry.status = "failed"; tileStats.failed++; draw(); });
}

// ---- viewport + hit-test ----
function bounds() {
  const { w, h } = size(), nw = screenToLatLon(0, 0), se = screenToLatLon(w, h);
  const full = worldSize(view.zoom) <= w;
  return { west: full ? -180 : nw.lon, east: full ? 180 : se.lon, north: Math.min(MAX_LAT, nw.lat), south: Math.max(-MAX_LAT, se.lat) };
}
let vpTimer = null;
function scheduleViewport() { clearTimeout(vpTimer); vpTimer = setTimeout(loadViewport, 120); }
function loadViewport() {
  if (!layer) return;
  const b = bounds(), seq = ++vpSeq;
  const q = "west=" + b.west.toFixed(6) + "&south=" + b.south.toFixed(6) + "&east=" + b.east.toFixed(6) +
    "&north=" + b.north.toFixed(6) + "&zoom=" + view.zoom.toFixed(3) + "&density=" + dpr + "&limit=5000";
  fetch("/viewport/" + encodeURIComponent(layer) + "?" + q).then(r => r.ok ? r.json() : r.text().then(t => { throw new Error(r.status + " " + t); }))
    .then(j => { if (seq === vpSeq) { vp = j; draw(); } })
    .catch(e => { statusEl.textContent = "viewport: " + e.message; });
}
function hitTest(px, py) { hitTestAt(screenToLatLon(px, py)); }
function hitTestAt(ll) {
  clickPoint = ll;
  const q = "lat=" + ll.lat.toFixed(6) + "&lon=" + ll.lon.toFixed(6) + "&zoom=" + view.zoom.toFixed(3) + "&density=" + dpr;
  fetch("/hittest/" + encodeURIComponent(layer) + "?" + q).then(r => r.ok ? r.json() : r.text().then(t => { throw new Error(r.status + " " + t); }))
    .then(j => {
      hitMarkers = j.hits.map(h => h.marker);
      hitsEl.textContent = "at " + ll.lat.toFixed(5) + ", " + ll.lon.toFixed(5) + "\n" + (j.hits.length === 0 ? "no marker here" :
        j.hits.map(h => h.marker.id + (h.tiled ? " (tiled)" : " (live)") + "\n  " + h.marker.lat.toFixed(5) + ", " +
          h.marker.lon.toFixed(5) + (Object.keys(h.marker.attributes).length ? "\n  " + JSON.stringify(h.marker.attributes) : "")).join("\n"));
      draw();
    }).catch(e => { hitsEl.textContent = "hit-test failed: " + e.message; });
}

// ---- drawing ----
function color(argb, fallback) {
  if (argb == null) return fallback;
  const a = ((argb >>> 24) & 255) / 255, r = (argb >>> 16) & 255, g = (argb >>> 8) & 255, b = argb & 255;
  return "rgba(" + r + "," + g + "," + b + "," + a.toFixed(3) + ")";
}
function drawPin(x, y, fill, highlight) {
  ctx.beginPath();
  ctx.moveTo(x, y);
  ctx.bezierCurveTo(x - 3, y - 7, x - 7, y - 10, x - 7, y - 15);
  ctx.arc(x, y - 15, 7, Math.PI, 0);
  ctx.bezierCurveTo(x + 7, y - 10, x + 3, y - 7, x, y);
  ctx.fillStyle = fill; ctx.fill();
  ctx.lineWidth = highlight ? 3 : 1; ctx.strokeStyle = highlight ? "#ffe14d" : "#ffffff"; ctx.stroke();
}
function draw() {
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== w * dpr || canvas.height !== h * dpr) { canvas.width = w * dpr; canvas.height = h * dpr; }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "#2b3447"; ctx.fillRect(0, 0, w, h);
  const c = center(), ox = c.x - w / 2, oy = c.y - h / 2;
  const tsize = (vp && vp.tileSize) || (layers.find(l => l.id === layer) || {}).tileSize || 256;
  const tz = Math.max(0, Math.min(22, Math.round(view.zoom + Math.log2(TILE / tsize))));
  const n = Math.pow(2, tz), span = worldSize(view.zoom) / n;
  const x0 = Math.floor(ox / span), x1 = Math.floor((ox + w) / span), y0 = Math.max(0, Math.floor(oy / span)), y1 = Math.min(n - 1, Math.floor((oy + h) / span));
  // world background (ocean) and graticule per tile
  ctx.fillStyle = "#33405a";
  ctx.fillRect(-ox - worldSize(view.zoom) * 4, -oy, worldSize(view.zoom) * 9, worldSize(view.zoom));
  for (let ty = y0; ty <= y1; ty++) for (let tx = x0; tx <= x1; tx++) {
    const wx = ((tx % n) + n) % n, sx = tx * span - ox, sy = ty * span - oy;
    ctx.strokeStyle = "rgba(255,255,255,0.08)"; ctx.lineWidth = 1; ctx.strokeRect(sx + 0.5, sy + 0.5, span, span);
    const url = tileURL(tz, wx, ty);
    if (!url) continue;
    let t = tiles.get(url);
    if (!t) { loadTile(url); t = tiles.get(url); }
    if (t.img) ctx.drawImage(t.img, sx, sy, span, span);
  }
  // live markers (all markers in native mode)
  const ws = worldSize(view.zoom);
  const hit = new Set(hitMarkers.map(m => m.id));
  if (vp) for (const m of vp.markers) {
    const p = project(m.lat, m.lon, view.zoom);
    for (const k of [-1, 0, 1]) {
      const sx = p.x + k * ws - ox, sy = p.y - oy;
      if (sx < -20 || sx > w + 20 || sy < -40 || sy > h + 20) continue;
      drawPin(sx, sy, color(m.fillColor, "#e8453c"), hit.has(m.id));
    }
  }
  for (const m of hitMarkers) {
    if (vp && vp.markers.some(v => v.id === m.id)) continue;
    const p = project(m.lat, m.lon, view.zoom);
    ctx.beginPath(); ctx.arc(p.x - ox, p.y - oy, 9, 0, 2 * Math.PI);
    ctx.lineWidth = 3; ctx.strokeStyle = "#ffe14d"; ctx.stroke();
  }
  if (clickPoint) {
    const p = project(clickPoint.lat, clickPoint.lon, view.zoom);
    ctx.strokeStyle = "#ffffff"; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(p.x - ox - 6, p.y - oy); ctx.lineTo(p.x - ox + 6, p.y - oy);
    ctx.moveTo(p.x - ox, p.y - oy - 6); ctx.lineTo(p.x - ox, p.y - oy + 6); ctx.stroke();
  }
  const l = layers.find(l => l.id === layer);
  statusEl.innerHTML =
    "<div><span class=k>zoom</span> " + view.zoom.toFixed(2) + " <span class=k>tile z</span> " + tz + "</div>" +
    "<div><span class=k>center</span> " + view.lat.toFixed(4) + ", " + view.lon.toFixed(4) + "</div>" +
    (l ? "<div><span class=k>markers</span> " + l.markerCount + " <span class=k>version</span> " + l.version + "</div>" : "") +
    (vp ? "<div><span class=k>mode</span> " + vp.mode + " <span class=k>static</span> " + vp.staticInView +
      " <span class=k>live</span> " + vp.liveInView + "</div><div><span class=k>drawn live</span> " + vp.markers.length + "</div>" : "") +
    "<div><span class=k>tiles</span> " + tileStats.loaded + " ok, " + tileStats.failed + " failed of " + tileStats.requested +
    " <span class=k>last</span> " + tileStats.lastStatus + "</div>";
}

// ---- interaction ----
let drag = null;
canvas.addEventListener("pointerdown", e => {
  drag = { x: e.clientX, y: e.clientY, c: center(), moved: false };
  canvas.setPointerCapture(e.pointerId); canvas.classList.add("drag");
});
canvas.addEventListener("pointermove", e => {
  if (!drag) return;
  const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
  if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
  const ll = unproject(drag.c.x - dx, drag.c.y - dy, view.zoom);
  view.lat = ll.lat; view.lon = ll.lon; clampView(); draw();
});
canvas.addEventListener("pointerup", e => {
  if (!drag) return;
  const r = canvas.getBoundingClientRect();
  if (!drag.moved) hitTest(e.clientX - r.left, e.clientY - r.top);
  else { scheduleViewport(); saveHash(); }
  drag = null; canvas.classList.remove("drag");
});
function zoomAt(px, py, dz) {
  const before = screenToLatLon(px, py);
  view.zoom = Math.max(0, Math.min(22, view.zoom + dz));
  const { w, h } = size(), p = project(before.lat, before.lon, view.zoom);
  const ll = unproject(p.x - (px - w / 2), p.y - (py - h / 2), view.zoom);
  view.lat = ll.lat; view.lon = ll.lon; clampView(); draw(); scheduleViewport(); saveHash();
}
canvas.addEventListener("wheel", e => {
  e.preventDefault();
  const r = canvas.getBoundingClientRect();
  zoomAt(e.clientX - r.left, e.clientY - r.top, -e.deltaY / 300);
}, { passive: false });
window.addEventListener("keydown", e => {
  const { w, h } = size();
  if (e.key === "+" || e.key === "=") zoomAt(w / 2, h / 2, 1);
  if (e.key === "-") zoomAt(w / 2, h / 2, -1);
});
window.addEventListener("resize", () => { draw(); scheduleViewport(); });
layerSelect.addEventListener("change", () => {
  layer = layerSelect.value; vp = null; hitMarkers = []; tiles.clear(); saveHash(); draw(); loadViewport();
});

fetch("/layers.json").then(r => r.json()).then(j => {
  layers = j.layers;
  const wanted = readHash();
  for (const l of layers) {
    const o = document.createElement("option");
    o.value = l.id; o.textContent = l.id + " (" + l.markerCount + ", " + l.mode + ")";
    layerSelect.appendChild(o);
  }
  layer = layers.some(l => l.id === wanted) ? wanted : (layers[0] ? layers[0].id : null);
  if (layer) layerSelect.value = layer; else statusEl.textContent = "no layers yet: create one with markerctl";
  draw(); loadViewport();
  if (layer && pendingHit) hitTestAt(pendingHit);
}).catch(e => { statusEl.textContent = "layers.json: " + e.message; });
draw();
</script>
</body>
</html>
"""#
}
