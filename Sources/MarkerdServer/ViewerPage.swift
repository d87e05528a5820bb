/// The viewer served at `/` by ``TileGateway``: one HTML page on Leaflet, which the gateway
/// serves from the installed package (`/viewer/leaflet/`, ``ViewerFiles``), over an offline
/// basemap (`/viewer/basemap/countries-z0.geojson` below z3, `countries-z3.geojson` from z3:
/// sea as the map's background, countries as filled polygons). Nothing is loaded from elsewhere.
///
/// - A layer picker (`/layers.json`).
/// - The layer's raster tiles (`L.tileLayer` on the viewport's tile template, versioned so the
///   browser may keep them; a layer with `clustering.raster` shows its clusters there as count
///   bubbles, a labelled layer its labels), and its live
///   markers (`/viewport/{layer}`: every marker of a native layer, the moving ones of a tiled
///   layer) as circles, refreshed after every pan or zoom; their moves arrive as Server-Sent Events
///   (`/layers/{layer}/events`) and move the circles in place, other changes reload the view
///   (a quarter second later, once for a burst). Without the event stream it polls every 3 s.
/// - A click runs `/hittest/{layer}` and lists the hits with their attributes (panel and popup).
/// - A panel with the layer's stats and its tile URL template to copy.
///
/// The URL fragment keeps the view: `/#layer=cities&z=5&lat=48.1&lon=11.6`; `&hit=LAT,LON` runs
/// a hit-test there on load (for screenshots); `&live=poll` polls instead of opening the event
/// stream (headless screenshots: Chromium's virtual time stands still while a fetch, such as an
/// event stream, is pending); `&signed=/t/{expiry}.{signature}` (a prefix from
/// the SignTileURL rpc, `markerctl sign-url`) shows a private layer without a token: every
/// per-layer request (tiles, viewport, hit-test, TileJSON) goes through the prefix until it
/// expires (then they fail with 403, and the panel says so). Without a basemap (`markerd --basemap-dir`) the
/// map says so and shows the sea colour alone; without Leaflet the page says so.
enum ViewerPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>markerd viewer</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/viewer/leaflet/leaflet.css">
<style>
  html, body { margin: 0; height: 100%; font: 13px system-ui, sans-serif; }
  #app { display: flex; height: 100%; }
  #side { width: 300px; flex: none; padding: 10px; box-sizing: border-box; overflow: auto; background: #252c3b; color: #dde3ee; }
  #side h1 { font-size: 16px; margin: 0 0 8px; }
  #side h2 { font-size: 14px; margin: 14px 0 6px; }
  #side select, #side input { width: 100%; box-sizing: border-box; margin-bottom: 6px; }
  #side pre { white-space: pre-wrap; word-break: break-word; font-size: 11px; background: #1d2330; padding: 6px; border-radius: 4px; margin: 0; }
  #side table { border-collapse: collapse; width: 100%; }
  #side td { padding: 1px 4px 1px 0; }
  #side td:first-child, .k { color: #8b95ad; }
  #side a { color: #9cc3e0; }
  #map { flex: 1; background: #9cc3e0; }
  .note { background: #fff3cd; color: #5c4400; padding: 4px 8px; border-radius: 4px; font: 12px system-ui, sans-serif; }
</style>
</head>
<body>
<div id="app">
  <div id="side">
    <h1>markerd viewer</h1>
    <label class="k" for="layer">layer</label>
    <select id="layer"></select>
    <table id="stats"></table>
    <h2>tile URL template</h2>
    <input id="template" readonly>
    <button id="copy">copy</button> <a id="tilejson" href="#">TileJSON</a>
    <div id="basemap" class="k" style="margin-top:8px">basemap: loading</div>
    <h2>hit-test</h2>
    <div class="k">click the map</div>
    <pre id="hits">-</pre>
  </div>
  <div id="map"></div>
</div>
<script src="/viewer/leaflet/leaflet.js"></script>
<script>
"use strict";
const LAND = "#f2efe6", BORDER = "#b5ab98", SEA = "#9cc3e0", LIVE = "#1f6feb", HIT = "#ffd400";
const HIT_TOLERANCE = 4;  // px around a click that still hits a marker (a mouse is precise)
const $ = id => document.getElementById(id);
const dpr = window.devicePixelRatio >= 2.5 ? 3 : window.devicePixelRatio >= 1.5 ? 2 : 1;
let map = null, layers = [], layer = null, vp = null, vpSeq = 0, tiles = null, tileTemplate = null;
const liveRenderer = typeof L === "undefined" ? null : L.canvas({ padding: 0.3 });
let live = null, hitRing = null, basemaps = {}, basemapShown = null, basemapNote = null;
const tileStats = { loaded: 0, failed: 0 };
// A signed prefix (`#signed=/t/{expiry}.{signature}`, from the SignTileURL rpc or `markerctl sign-url`): put before
// the layer's paths, it lets the page show a private layer without a token until it expires.
let signed = "", signedLayer = null;
let events = null, eventsLayer = null, liveEvents = 0, reloadTimer = null;  // the layer's event stream
const livePolling = new URLSearchParams(location.hash.slice(1)).get("live") === "poll";
const via = () => layer === signedLayer ? signed : "";  // the prefix of the current layer's paths

function row(k, v) {
  const tr = document.createElement("tr"), a = document.createElement("td"), b = document.createElement("td");
  a.textContent = k; b.textContent = v; tr.append(a, b); return tr;
}
function showStats() {
  const l = layers.find(l => l.id === layer), rows = [];
  if (l) rows.push(row("mode", l.mode), row("markers", l.markerCount), row("version", l.version), row("tile size", l.tileSize + " px"),
    row("labels", l.labels ? "on" + (l.labelAttribute ? " (" + l.labelAttribute + ")" : "") : "off"),
    row("clusters", l.clusters ? "bubbles in the tiles" : "off"));
  if (vp) rows.push(row("static in view", vp.staticInView), row("live in view", vp.liveInView),
    row("live drawn", vp.markers.length + (vp.nextPageToken ? " (more not shown)" : "")));
  if (map) rows.push(row("zoom", map.getZoom()), row("center", map.getCenter().lat.toFixed(4) + ", " + map.getCenter().lng.toFixed(4)));
  rows.push(row("tiles", tileStats.loaded + " loaded, " + tileStats.failed + " failed"));
  rows.push(row("live events", events && events.readyState === 1 ? liveEvents + " received" : "polling"));
  $("stats").replaceChildren(...rows);
}
function json(url) {
  return fetch(url).then(r => r.ok ? r.json() : r.text().then(t => { throw new Error(r.status + " " + t.trim()); }));
}
function argb(c, fallback) {
  if (c == null) return fallback;
  return "rgba(" + ((c >>> 16) & 255) + "," + ((c >>> 8) & 255) + "," + (c & 255) + "," + (((c >>> 24) & 255) / 255).toFixed(3) + ")";
}
function nearLon(lon) {  // the copy of lon nearest the view's centre (the world repeats sideways)
  const c = map.getCenter().lng;
  return lon + 360 * Math.round((c - lon) / 360);
}

// ---- basemap: sea is the map's background, countries filled polygons below the tiles ----
function basemapFor(zoom) { return zoom < 3 ? "countries-z0.geojson" : "countries-z3.geojson"; }
function showBasemap() {
  const name = basemapFor(map.getZoom());
  if (basemapShown === name) return;
  const entry = basemaps[name];
  if (!entry) {
    basemaps[name] = "loading";
    json("/viewer/basemap/" + name).then(doc => {
      // Three copies side by side: the world repeats sideways (tiles and markers do too).
      const renderer = L.canvas({ pane: "basemap", padding: 0.5 });
      basemaps[name] = L.layerGroup([-360, 0, 360].map(shift => L.geoJSON(doc, { pane: "basemap", renderer, interactive: false,
        coordsToLatLng: c => L.latLng(c[1], c[0] + shift), attribution: shift === 0 ? "Natural Earth" : undefined,
        style: { color: BORDER, weight: 0.8, fillColor: LAND, fillOpacity: 1, opacity: 1 } })));
      $("basemap").textContent = "basemap: Natural Earth countries (" + doc.features.length + ")";
      basemapShown = null; showBasemap();
    }).catch(e => {
      basemaps[name] = "missing";
      $("basemap").textContent = "basemap missing: " + e.message;
      if (!basemapNote) {
        basemapNote = L.control({ position: "bottomleft" });
        basemapNote.onAdd = () => { const d = L.DomUtil.create("div", "note"); d.textContent = "basemap missing (markerd --basemap-dir)"; return d; };
        basemapNote.addTo(map);
      }
    });
    return;
  }
  if (!(entry instanceof L.Layer)) return;
  for (const other of Object.values(basemaps)) if (other instanceof L.Layer && other !== entry) map.removeLayer(other);
  entry.addTo(map);
  basemapShown = name;
}

// ---- the layer: raster tiles, live markers ----
function setTiles() {
  let t = vp && vp.mode === "tiled" && vp.tileURLTemplate;
  if (t) {
    const prefix = via() + "/tiles/" + layer + "/";
    if (vp.tileVersion != null && t.startsWith(prefix)) t = prefix + "v" + vp.tileVersion + "/" + t.slice(prefix.length);
    if (dpr > 1) t = t.replace(/\.png$/, "@" + dpr + "x.png");
  }
  if (t === tileTemplate) return;
  tileTemplate = t || null;
  if (!t) { if (tiles) { map.removeLayer(tiles); tiles = null; } return; }
  if (tiles) { tiles.setUrl(t); return; }
  const size = vp.tileSize || 256;
  // 512 px tiles: a 512 px tile of zoom z covers what 256 px tiles of z + 1 do; at map zoom 0 the
  // z0 tile is drawn at half size (minNativeZoom).
  const big = size === 512;
  tiles = L.tileLayer(t, { tileSize: size, zoomOffset: big ? -1 : 0, minNativeZoom: big ? 1 : 0, maxZoom: 22, maxNativeZoom: 22,
    attribution: "markerd" });
  tiles.on("tileload", () => { tileStats.loaded++; showStats(); });
  tiles.on("tileerror", () => { tileStats.failed++; showStats(); });
  tiles.addTo(map);
}
function drawLive() {
  live.clearLayers();
  if (!vp) return;
  for (const m of vp.markers) {
    const c = L.circleMarker([m.lat, nearLon(m.lon)], { renderer: liveRenderer, radius: 6, weight: 1.5, color: "#ffffff",
      fillColor: argb(m.fillColor, LIVE), fillOpacity: 1, interactive: false });
    c.addTo(live);
  }
}
function viewBounds() {
  const b = map.getBounds(), clamp = v => Math.max(-85.05, Math.min(85.05, v));
  const wrap = lon => ((lon + 540) % 360) - 180;
  const full = b.getEast() - b.getWest() >= 360;
  return { west: full ? -180 : wrap(b.getWest()), east: full ? 180 : wrap(b.getEast()), south: clamp(b.getSouth()), north: clamp(b.getNorth()) };
}
function loadViewport() {
  if (!layer || !map) return;
  const b = viewBounds(), seq = ++vpSeq;
  const q = "west=" + b.west.toFixed(6) + "&south=" + b.south.toFixed(6) + "&east=" + b.east.toFixed(6) + "&north=" + b.north.toFixed(6) +
    "&zoom=" + map.getZoom() + "&density=" + dpr + "&limit=5000";
  json(via() + "/viewport/" + encodeURIComponent(layer) + "?" + q).then(j => {
    if (seq !== vpSeq) return;
    vp = j; setTiles(); drawLive(); showStats(); showTemplate();
  }).catch(e => { $("hits").textContent = "viewport: " + e.message; });
}
// ---- live changes: Server-Sent Events of the layer (moves applied in place) ----
function listen() {
  if (events && eventsLayer === layer) return;
  if (events) events.close();
  events = null; eventsLayer = layer;
  if (!layer || livePolling || typeof EventSource === "undefined") return;
  events = new EventSource(via() + "/layers/" + encodeURIComponent(layer) + "/events");
  events.onmessage = e => applyChange(JSON.parse(e.data));
  events.addEventListener("reload", () => loadViewport());
}
function applyChange(c) {
  liveEvents++;
  if (!vp) return;
  if (c.kind === "move" || c.kind === "drag") {
    const byId = new Map(vp.markers.map(m => [m.id, m]));
    let unseen = false;
    for (const m of c.markers) { const v = byId.get(m.id); if (v) { v.lat = m.lat; v.lon = m.lon; } else unseen = true; }
    drawLive(); showStats();
    if (unseen || c.removed.length) reloadSoon();
  } else reloadSoon();
}
function reloadSoon() { if (!reloadTimer) reloadTimer = setTimeout(() => { reloadTimer = null; loadViewport(); }, 250); }
function showTemplate() {
  const l = layers.find(l => l.id === layer);
  if (!l && !(vp && vp.tileURLTemplate)) return;
  const t = (vp && vp.tileURLTemplate) || (via() + "/tiles/" + encodeURIComponent(layer) + "/" + l.tileSize + "/{z}/{x}/{y}.png");
  $("template").setAttribute("value", location.origin + t);
  $("tilejson").href = via() + "/tiles/" + encodeURIComponent(layer) + ".json";
}

// ---- the layer list (picker and stats), refreshed with the viewport ----
function loadLayers() {
  return json("/layers.json").then(j => {
    layers = j.layers;
    const picker = $("layer"), ids = layers.map(l => l.id), names = layers.map(l => l.id + " (" + l.markerCount + ", " + l.mode + ")");
    // A private layer seen through its signed prefix is not in /layers.json (which lists what needs no token).
    if (signedLayer && !ids.includes(signedLayer)) { ids.push(signedLayer); names.push(signedLayer + " (signed)"); }
    if (names.join("\n") !== [...picker.options].map(o => o.textContent).join("\n")) {  // keep an open picker open
      picker.replaceChildren(...ids.map((id, i) => { const o = document.createElement("option"); o.value = id; o.textContent = names[i]; return o; }));
      if (layer && ids.includes(layer)) picker.value = layer;
    }
    showStats();
  }).catch(e => { $("hits").textContent = "layers.json: " + e.message; });
}

// ---- hit-test ----
function hitTest(ll) {
  const lon = ((ll.lng + 540) % 360) - 180;
  const q = "lat=" + ll.lat.toFixed(6) + "&lon=" + lon.toFixed(6) + "&zoom=" + map.getZoom() + "&density=" + dpr + "&tolerance=" + HIT_TOLERANCE;
  json(via() + "/hittest/" + encodeURIComponent(layer) + "?" + q).then(j => {
    const lines = ["at " + ll.lat.toFixed(5) + ", " + lon.toFixed(5)];
    if (j.hits.length === 0) lines.push("no marker here");
    for (const h of j.hits) {
      const m = h.marker;
      lines.push(m.id + (h.tiled ? " (tiled" : " (live") + (h.onLabel ? ", on its label)" : ")") + "  " + m.lat.toFixed(5) + ", " + m.lon.toFixed(5));
      for (const k of Object.keys(m.attributes).sort()) lines.push("  " + k + ": " + m.attributes[k]);
    }
    $("hits").textContent = lines.join("\n");
    if (hitRing) { map.removeLayer(hitRing); hitRing = null; }
    if (j.hits.length > 0) {  // the popup shows the topmost hit, the panel every hit
      const m = j.hits[0].marker, pre = document.createElement("pre"), more = j.hits.length - 1;
      pre.style.margin = "0";
      pre.textContent = lines.slice(1, 2 + Object.keys(m.attributes).length).join("\n") + (more ? "\n(" + more + " more under it: see the panel)" : "");
      hitRing = L.circleMarker([m.lat, nearLon(m.lon)], { radius: 11, weight: 3, color: HIT, fill: false, interactive: false }).addTo(map);
      L.popup({ maxWidth: 320 }).setLatLng([m.lat, nearLon(m.lon)]).setContent(pre).openOn(map);
    }
  }).catch(e => { $("hits").textContent = "hit-test failed: " + e.message; });
}

// ---- state in the URL fragment ----
function saveHash() {
  if (!layer || !map) return;
  const c = map.getCenter();
  history.replaceState(null, "", "#layer=" + encodeURIComponent(layer) + "&z=" + map.getZoom() + "&lat=" + c.lat.toFixed(5) + "&lon=" + c.lng.toFixed(5)
    + (via() ? "&signed=" + signed : ""));
}

function start() {
  if (typeof L === "undefined") {
    $("map").innerHTML = "<p class=note style='margin:20px'>Leaflet did not load from /viewer/leaflet/leaflet.js: apt-get install libjs-leaflet, or start markerd with --leaflet-dir DIR.</p>";
    return;
  }
  const p = new URLSearchParams(location.hash.slice(1)), num = (k, d) => { const v = parseFloat(p.get(k)); return isFinite(v) ? v : d; };
  if (/^\/t\/[0-9]+\.[A-Za-z0-9_-]+$/.test(p.get("signed") || "") && p.get("layer")) { signed = p.get("signed"); layer = signedLayer = p.get("layer"); }
  map = L.map("map", { worldCopyJump: true, maxZoom: 22, attributionControl: false, zoomControl: true })
    .setView([num("lat", 20), num("lon", 0)], num("z", 2));
  L.control.attribution({ prefix: "Leaflet" }).addTo(map);
  map.createPane("basemap").style.zIndex = 150;
  live = L.layerGroup().addTo(map);
  map.on("zoomend", showBasemap);
  map.on("moveend", () => { saveHash(); loadViewport(); showStats(); });
  map.on("click", e => { if (layer) hitTest(e.latlng); });
  showBasemap();
  setInterval(() => { loadLayers(); if (!events || events.readyState !== 1) loadViewport(); }, 3000);
  $("copy").addEventListener("click", () => {
    const t = $("template"); t.select();
    if (navigator.clipboard) navigator.clipboard.writeText(t.value).catch(() => document.execCommand("copy")); else document.execCommand("copy");
  });
  $("layer").addEventListener("change", () => {
    layer = $("layer").value; vp = null; tileTemplate = null; tileStats.loaded = tileStats.failed = 0;
    if (tiles) { map.removeLayer(tiles); tiles = null; }
    live.clearLayers(); saveHash(); showStats(); showTemplate(); loadViewport(); listen();
  });
  loadLayers().then(() => {
    const wanted = p.get("layer");
    if (!signedLayer) layer = layers.some(l => l.id === wanted) ? wanted : (layers[0] ? layers[0].id : null);
    if (!layer) { $("hits").textContent = "no layers yet: create one with markerctl"; return; }
    $("layer").value = layer;
    showStats(); showTemplate(); loadViewport(); listen();
    const hit = (p.get("hit") || "").split(",").map(parseFloat);
    if (hit.length === 2 && hit.every(isFinite)) hitTest(L.latLng(hit[0], hit[1]));
  });
}
start();
</script>
</body>
</html>
"""#
}
