import Foundation
import MarkerdAPI
import MarkerdCore

/// SplitMix64: a tiny, fast, seeded generator (the same one the tests use), so every run with
/// the same `--seed` builds the same layer and asks the same questions.
struct SeededRNG: RandomNumberGenerator, Sendable {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// Uniform in `range`.
    mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + unit() * (range.upperBound - range.lowerBound)
    }

    /// Standard normal (Box-Muller).
    mutating func gaussian() -> Double {
        let u1 = max(unit(), 1e-300), u2 = unit()
        return (-2 * Foundation.log(u1)).squareRoot() * Foundation.cos(2 * Double.pi * u2)
    }

    /// Uniform in 0..<n.
    mutating func index(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// A "city": the centre of a Gaussian cluster of markers.
struct City: Sendable {
    /// Degrees.
    var latitude: Double
    /// Degrees.
    var longitude: Double
    /// Standard deviation of the cluster, in kilometres.
    var sigmaKm: Double
}

/// The synthetic, seeded marker layer every measurement uses.
///
/// - 70 % of the markers are in Gaussian clusters around `cityCount` city centres (each city
///   has its own sigma of 2-8 km; centres uniform in longitude, latitude within +-60 degrees),
///   30 % uniform over the Web Mercator world (uniform in world x and y).
/// - ids are "m0", "m1", ... "m<N-1>"; every marker uses the default pin.
/// - 0.1 % of the markers are draggable (live markers that stay native objects in TILED mode).
///
/// Positions are kept in compact arrays (16 bytes per marker) and turned into API or core
/// values on demand.
struct SyntheticLayer: Sendable {
    static let cityCount = 300
    static let clusteredFraction = 0.70
    static let draggableFraction = 0.001
    /// Kilometres per degree of latitude.
    static let kmPerDegree = 111.32

    let count: Int
    let cities: [City]
    /// Degrees, one per marker.
    private(set) var latitudes: [Double]
    /// Degrees, one per marker.
    private(set) var longitudes: [Double]
    /// Indices of the draggable markers, ascending.
    let draggable: [Int]
    /// UTF-8 bytes of all ids together.
    let totalIDBytes: Int

    /// Builds `count` markers from `seed` (deterministic).
    init(count: Int, seed: UInt64) {
        var rng = SeededRNG(seed: seed)
        var cities: [City] = []
        cities.reserveCapacity(Self.cityCount)
        for _ in 0..<Self.cityCount {
            cities.append(City(latitude: rng.uniform(-60...60), longitude: rng.uniform(-179...179),
                               sigmaKm: rng.uniform(2...8)))
        }
        var lats = [Double](repeating: 0, count: count)
        var lons = [Double](repeating: 0, count: count)
        var draggable: [Int] = []
        var idBytes = 0
        for i in 0..<count {
            let p: LatLng
            if rng.unit() < Self.clusteredFraction {
                let c = cities[rng.index(cities.count)]
                p = Self.offset(LatLng(latitude: c.latitude, longitude: c.longitude),
                                northKm: rng.gaussian() * c.sigmaKm, eastKm: rng.gaussian() * c.sigmaKm)
            } else {
                let y = rng.unit() * Mercator.worldSize
                p = LatLng(latitude: Mercator.latitude(worldY: y),
                           longitude: Mercator.longitude(worldX: rng.unit() * Mercator.worldSize))
            }
            lats[i] = p.latitude
            lons[i] = p.longitude
            if rng.unit() < Self.draggableFraction { draggable.append(i) }
            idBytes += Self.idLength(i)
        }
        self.count = count
        self.cities = cities
        self.latitudes = lats
        self.longitudes = lons
        self.draggable = draggable
        self.totalIDBytes = idBytes
    }

    /// The id of marker `i`: "m" followed by `i` in decimal.
    static func id(_ i: Int) -> String { "m" + String(i) }

    /// UTF-8 length of `id(i)`.
    static func idLength(_ i: Int) -> Int {
        var digits = 1, v = i
        while v >= 10 { v /= 10; digits += 1 }
        return 1 + digits
    }

    /// Average id length in bytes.
    var averageIDBytes: Double { count == 0 ? 0 : Double(totalIDBytes) / Double(count) }

    /// The tile at `zoom` under a random marker of a city cluster (within 3 sigma of a city
    /// centre), so that the tile shows markers at every zoom (the cold tiles of `TileBench` and
    /// `CityTileBench`).
    func tileNearCity(zoom: Int, _ rng: inout SeededRNG) -> TileID {
        while true {
            let p = position(rng.index(count))
            let nearCity = cities.contains { c in
                let north = (p.latitude - c.latitude) * Self.kmPerDegree
                var dLon = abs(p.longitude - c.longitude)
                if dLon > 180 { dLon = 360 - dLon }
                let east = dLon * Self.kmPerDegree * Foundation.cos(c.latitude * Double.pi / 180)
                return north * north + east * east <= 9 * c.sigmaKm * c.sigmaKm
            }
            if nearCity { return TileID.containing(p, zoom: zoom) }
        }
    }

    /// Position of marker `i`.
    func position(_ i: Int) -> LatLng { LatLng(latitude: latitudes[i], longitude: longitudes[i]) }

    /// `p` moved by the given kilometres, clamped to the Web Mercator limits and wrapped in longitude.
    static func offset(_ p: LatLng, northKm: Double, eastKm: Double) -> LatLng {
        var lat = p.latitude + northKm / kmPerDegree
        lat = min(max(lat, -Mercator.maxLatitude + 1e-6), Mercator.maxLatitude - 1e-6)
        let cosLat = max(0.01, Foundation.cos(lat * Double.pi / 180))
        var lon = p.longitude + eastKm / (kmPerDegree * cosLat)
        if lon > 180 { lon -= 360 }
        if lon < -180 { lon += 360 }
        return LatLng(latitude: lat, longitude: min(max(lon, -180), 180))
    }

    // MARK: API and core values

    /// The API marker `i`: id, position, default pin (no icon set), draggable for the live ones.
    func apiMarker(_ i: Int, isDraggable: Bool) -> V1.Marker {
        var m = V1.Marker()
        m.id = Self.id(i)
        m.position = V1.LatLng(latitude: latitudes[i], longitude: longitudes[i])
        if isDraggable { m.draggable = true }
        return m
    }

    /// Every marker as API values, in id order.
    func apiMarkers() -> [V1.Marker] {
        var out: [V1.Marker] = []
        out.reserveCapacity(count)
        var next = 0
        for i in 0..<count {
            let isDraggable = next < draggable.count && draggable[next] == i
            if isDraggable { next += 1 }
            out.append(apiMarker(i, isDraggable: isDraggable))
        }
        return out
    }

    /// Markers `range` as core records (for the in-process `MarkerLayer`).
    func records(_ range: Range<Int>) -> [MarkerRecord] {
        let dragSet = Set(draggable.filter { range.contains($0) })
        return range.map { i in
            MarkerRecord(id: Self.id(i), position: position(i), draggable: dragSet.contains(i))
        }
    }

    // MARK: Workloads

    /// A city-sized viewport: `widthPx` x `heightPx` CSS px (density 1) at a random zoom in
    /// `zooms` (default 12...16), centred at a random city centre shifted by one sigma-distributed offset.
    func randomViewport(_ rng: inout SeededRNG, widthPx: Double = 1080, heightPx: Double = 1920,
                        zooms: ClosedRange<Double> = 12...16) -> (bounds: V1.Bounds, zoom: Double) {
        let c = cities[rng.index(cities.count)]
        let centre = Self.offset(LatLng(latitude: c.latitude, longitude: c.longitude),
                                 northKm: rng.gaussian() * c.sigmaKm, eastKm: rng.gaussian() * c.sigmaKm)
        let zoom = rng.uniform(zooms)
        let u = Mercator.worldUnitsPerPixel(zoom: zoom)  // world units per CSS px
        let cx = Mercator.worldX(longitude: centre.longitude), cy = Mercator.worldY(latitude: centre.latitude)
        let w = Mercator.worldSize
        let bounds = V1.Bounds(
            west: Mercator.longitude(worldX: max(0, cx - widthPx / 2 * u)),
            south: Mercator.latitude(worldY: min(w, cy + heightPx / 2 * u)),
            east: Mercator.longitude(worldX: min(w, cx + widthPx / 2 * u)),
            north: Mercator.latitude(worldY: max(0, cy - heightPx / 2 * u)))
        return (bounds, zoom)
    }

    /// A tap near a random existing marker at a random zoom in 12...16: up to 8 px left or right
    /// of its position and from 30 px above to 4 px below it (the default pin stands on its tip).
    func randomHitPoint(_ rng: inout SeededRNG) -> (point: V1.LatLng, zoom: Double) {
        let i = rng.index(count)
        let zoom = rng.uniform(12...16)
        let u = Mercator.worldUnitsPerPixel(zoom: zoom)
        let w = Mercator.worldSize
        let x = min(max(Mercator.worldX(longitude: longitudes[i]) + rng.uniform(-8...8) * u, 0), w - 1)
        let y = min(max(Mercator.worldY(latitude: latitudes[i]) + rng.uniform(-30...4) * u, 0), w - 1)
        return (V1.LatLng(latitude: Mercator.latitude(worldY: y), longitude: Mercator.longitude(worldX: x)), zoom)
    }

    /// A vehicle-like move of a random marker: up to about 50 m in each direction from its
    /// original position. Returns the marker index and its new position.
    func randomMove(_ rng: inout SeededRNG) -> (index: Int, position: LatLng) {
        let i = rng.index(count)
        return (i, Self.offset(position(i), northKm: rng.uniform(-0.05...0.05), eastKm: rng.uniform(-0.05...0.05)))
    }

    /// `n` random moves of distinct markers as API values (a MoveMarkers batch may not name a
    /// marker twice). `n` must be at most `count`.
    func randomAPIMoves(_ n: Int, _ rng: inout SeededRNG) -> [V1.MarkerMove] {
        var seen = Set<Int>(minimumCapacity: n)
        var out: [V1.MarkerMove] = []
        out.reserveCapacity(n)
        while out.count < n {
            let m = randomMove(&rng)
            guard seen.insert(m.index).inserted else { continue }
            out.append(V1.MarkerMove(id: Self.id(m.index),
                                     position: V1.LatLng(latitude: m.position.latitude, longitude: m.position.longitude)))
        }
        return out
    }
}

extension SyntheticLayer {
    /// MarkerdCore's `MarkerLayer` holding every marker (upserts in batches of 100k at time 0),
    /// and how long building it took (including the `MarkerRecord` values).
    func coreLayer() throws -> (layer: MarkerLayer, elapsed: Duration) {
        var core = try MarkerLayer()
        let (_, elapsed) = try timed { () throws -> Void in
            var start = 0
            while start < count {
                let end = min(count, start + 100_000)
                _ = try core.upsert(records(start..<end), now: 0)
                start = end
            }
        }
        guard core.count == count else { throw BenchError("in-process layer holds \(core.count) markers") }
        return (core, elapsed)
    }
}
