import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdServer
import MarkerdService
import MarkerdTestSupport
import Testing

/// The built `markerctl` run against a real markerd over TCP: load's progress lines, tiles seed,
/// export and its round trip through load, argument errors, and each command's --help.
@Suite struct MarkerctlTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs markerctl with `arguments`, standard output to a file; standard error to a file too
    /// or, with `terminal`, to a pseudo-terminal (read while it runs).
    static func markerctl(_ arguments: [String], url: String = "tcp://127.0.0.1:1", terminal: Bool = false) throws -> Run {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (outPath, errPath) = (dir + "/stdout", dir + "/stderr")
        FileManager.default.createFile(atPath: outPath, contents: nil)
        FileManager.default.createFile(atPath: errPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: MarkerdProcess.built("markerctl"))
        process.arguments = ["--url", url] + arguments
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        final class TerminalOutput: @unchecked Sendable {
            let master: Int32
            let slave: FileHandle
            let done = DispatchSemaphore(value: 0)
            var bytes: [UInt8] = []  // written by the reader before `done`, read after it
            init(master: Int32, slave: FileHandle) { (self.master, self.slave) = (master, slave) }
        }
        var terminalOutput: TerminalOutput?
        if terminal {
            // A pseudo-terminal: /dev/ptmx, unlocked (TIOCSPTLCK 0), its slave /dev/pts/N (TIOCGPTN).
            let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
            var unlock: Int32 = 0, number: UInt32 = 0
            guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
                throw MarkerdProcess.ProcessError(message: "no pseudo-terminal: \(String(cString: strerror(errno)))")
            }
            guard let slave = FileHandle(forWritingAtPath: "/dev/pts/\(number)") else {
                throw MarkerdProcess.ProcessError(message: "cannot open /dev/pts/\(number)")
            }
            process.standardError = slave
            let output = TerminalOutput(master: master, slave: slave)
            // Read until the terminal's last writer is gone (read fails with EIO then).
            Thread.detachNewThread {
                var chunk = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = chunk.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
                    guard n > 0 else { break }
                    output.bytes += chunk[..<n]
                }
                output.done.signal()
            }
            terminalOutput = output
        } else {
            process.standardError = FileHandle(forWritingAtPath: errPath)
        }
        try process.run()
        process.waitUntilExit()
        let text = { (path: String) in String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) }
        var stderr = text(errPath)
        if let terminalOutput {
            // With the parent's handle of the terminal closed, the reader sees its end.
            try terminalOutput.slave.close()
            terminalOutput.done.wait()
            close(terminalOutput.master)
            stderr = String(decoding: terminalOutput.bytes, as: UTF8.self)
        }
        return Run(status: process.terminationStatus, stdout: text(outPath), stderr: stderr)
    }

    /// Every field export writes: id, position, attributes (with quotes, commas and non-ASCII),
    /// z_index, clickable, draggable, visible.
    static func randomMarkers(_ count: Int, seed: UInt64) -> [V1.Marker] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { i in
            // On markerd's 1e-7 degree grid, so that the positions come back exactly.
            let lat = ((rng.unit() * 170 - 85) * 1e7).rounded() / 1e7, lon = ((rng.unit() * 360 - 180) * 1e7).rounded() / 1e7
            return marker("m\(i) \"é\"", lat, lon) { m in
                m.zIndex = Int32(rng.next() % 7) - 3
                if rng.next() % 3 == 0 { m.clickable = false }
                if rng.next() % 5 == 0 { m.draggable = true }
                if rng.next() % 4 == 0 { m.visible = false }
                m.attributes = ["name": "place, \"\(i)\" ✓", "rank": "\(rng.next() % 100)"]
                if i % 4 == 0 { m.attributes["z_index"] = "text" }
            }
        }
    }

    /// What a marker looks like after export and load: the written fields, defaults made explicit.
    static func summary(_ m: V1.Marker) -> String {
        "\(m.id) \(m.position?.latitude ?? .nan) \(m.position?.longitude ?? .nan) z=\(m.zIndex) " +
            "clickable=\(m.clickable ?? true) draggable=\(m.draggable ?? false) visible=\(m.visible ?? true) " +
            m.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";")
    }

    /// load writes a GeoJSON file's markers into A; export writes A to a file; load of that file
    /// into B gives the same markers (every exported field), and the exported file has one
    /// feature per marker. Piped (not a terminal), load's progress comes as plain lines, one per
    /// 10 %, without carriage returns; on a terminal as one line redrawn after carriage returns.
    @Test func exportLoadsBackAsTheSameMarkers() throws {
        let s = try TestServer(.tcp)
        defer { s.stop() }
        let c = try s.client()
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let markers = Self.randomMarkers(1000, seed: testSeed())
        let source = dir + "/source.geojson"
        let features = markers.map(MarkerFile.geoJSONFeature).joined(separator: ",")
        try Data("{\"type\":\"FeatureCollection\",\"features\":[\(features)]}".utf8).write(to: URL(fileURLWithPath: source))
        _ = try createLayer(c, "A")
        _ = try createLayer(c, "B")

        let load = try Self.markerctl(["load", "A", source, "--batch", "100", "--concurrency", "1"], url: s.url)
        #expect(load.status == 0, "\(load.stderr)")
        #expect(load.stdout.hasPrefix("loaded 1000 markers into A (1000 created, 0 updated)"))
        #expect(!load.stderr.contains("\r"))
        for percent in stride(from: 10, through: 100, by: 10) {
            #expect(load.stderr.contains("loading A: \(percent * 10)/1000 markers (\(percent)%)"), "\(load.stderr)")
        }

        // On a terminal: one line redrawn with carriage returns, ended by a newline before the summary.
        try c.clearLayer("A")
        let onTerminal = try Self.markerctl(["load", "A", source, "--batch", "100"], url: s.url, terminal: true)
        #expect(onTerminal.status == 0 && onTerminal.stdout.hasPrefix("loaded 1000 markers into A (1000 created"))
        // (The terminal sends "\n" as "\r\n".)
        let lines = onTerminal.stderr.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines.first?.hasPrefix("read 1000 markers from ") == true && lines.last == "", "\(lines)")
        let redrawn = try #require(lines.dropFirst().first)
        #expect(redrawn.hasPrefix("\rloading A [") && redrawn.contains("] 1000/1000 markers 100% "), "\(redrawn)")
        #expect(!onTerminal.stderr.contains("(10%)"))

        let exported = dir + "/a.geojson"
        let export = try Self.markerctl(["export", "A", exported, "--page-size", "70"], url: s.url)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout.hasPrefix("exported 1000 markers of A to \(exported)"))
        #expect(!export.stderr.contains("\r") && export.stderr.contains("exporting A: 1000/1000 markers (100%)"))
        let file = try #require(FileManager.default.contents(atPath: exported))
        let collection = try #require(try JSONSerialization.jsonObject(with: file) as? [String: Any])
        #expect(collection["type"] as? String == "FeatureCollection")
        #expect((collection["features"] as? [Any])?.count == 1000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["a.geojson", "source.geojson"])

        let reload = try Self.markerctl(["load", "B", exported], url: s.url)
        #expect(reload.status == 0, "\(reload.stderr)")
        let ids = markers.map(\.id)
        let a = try c.getMarkers("A", ids: ids).markers.map(Self.summary).sorted()
        let b = try c.getMarkers("B", ids: ids).markers.map(Self.summary).sorted()
        #expect(a.count == 1000)
        #expect(mismatch(a, b) == nil)
        // What was loaded is what the test wrote (an attribute named z_index is kept as text
        // while the field is 0, overwritten by the field otherwise: see geoJSONFeature).
        let wrote = markers.map { m in
            var m = m
            if m.zIndex != 0 { m.attributes["z_index"] = nil }
            return Self.summary(m)
        }.sorted()
        #expect(mismatch(wrote, a) == nil)
    }

    /// load of a CSV: every column but id, lat, lon and z_index becomes an attribute of its row's
    /// marker (sent as columns), non-ASCII names and values included; an empty field or a short
    /// row gives that marker no such attribute. A header naming a column twice is refused.
    @Test func csvColumnsLoadAsAttributes() throws {
        let s = try TestServer(.tcp)
        defer { s.stop() }
        let c = try s.client()
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let csv = dir + "/places.csv"
        try Data("""
            id,lat,lon,name,z_index,category,名前
            a,1,2,Köln,3,city,ケルン
            b,3,4,,0,town,
            c,5,6,Ōsaka
            """.utf8).write(to: URL(fileURLWithPath: csv))
        _ = try createLayer(c, "A")
        let load = try Self.markerctl(["load", "A", csv], url: s.url)
        #expect(load.status == 0, "\(load.stderr)")
        let got = try c.getMarkers("A", ids: ["a", "b", "c"]).markers.map(Self.summary).sorted()
        #expect(got == ["a 1.0 2.0 z=3 clickable=true draggable=false visible=true category=city;name=Köln;名前=ケルン",
                        "b 3.0 4.0 z=0 clickable=true draggable=false visible=true category=town",
                        "c 5.0 6.0 z=0 clickable=true draggable=false visible=true name=Ōsaka"], "\(got)")

        // Columns beside markers with attributes of their own (which the column path declines):
        // both kinds arrive, a cell over the marker's own value of the same key.
        var own = V1.Marker()
        own.id = "d"
        own.position = V1.LatLng(latitude: 7, longitude: 8)
        own.attributes = ["own": "x", "name": "old"]
        var columns = AttributeColumns(keys: ["name"])
        columns.append("Köln")
        _ = try c.upsertMarkers("A", [own][...], attributes: columns)
        #expect(try c.getMarkers("A", ids: ["d"]).markers.first?.attributes == ["own": "x", "name": "Köln"])

        let twice = dir + "/twice.csv"
        try Data("id,lat,lon,name,Name\na,1,2,x,y\n".utf8).write(to: URL(fileURLWithPath: twice))
        let refused = try Self.markerctl(["load", "A", twice], url: s.url)
        #expect(refused.status != 0 && refused.stderr.contains("the header names a column twice: id,lat,lon,name,name"), "\(refused.stderr)")
    }

    /// A GeoJSON file whose features have property keys of their own (as OSM tags come) is not
    /// read as columns (features x keys cells, nearly all absent): each marker keeps its own
    /// attributes, and load stores them all. A file of shared keys is read as columns.
    @Test func sparseGeoJSONPropertiesStayOnTheMarkers() throws {
        let n = 3_000
        let features = (0..<n).map { i in
            "{\"type\":\"Feature\",\"id\":\"f\(i)\",\"geometry\":{\"type\":\"Point\",\"coordinates\":[\(Double(i % 360) - 180),\(Double(i % 170) - 85)]},"
                + "\"properties\":{\"name\":\"place \(i)\",\"tag\(i)\":\"v\(i)\"}}"
        }.joined(separator: ",")
        let sparse = Data("{\"type\":\"FeatureCollection\",\"features\":[\(features)]}".utf8)
        let read = try MarkerFile.geoJSON(sparse)
        #expect(read.attributes.keys.isEmpty)
        #expect(read.markers[7].attributes == ["name": "place 7", "tag7": "v7"])
        let dense = (0..<10).map { i in
            "{\"type\":\"Feature\",\"id\":\"d\(i)\",\"geometry\":{\"type\":\"Point\",\"coordinates\":[1,2]},\"properties\":{\"name\":\"n\(i)\"}}"
        }.joined(separator: ",")
        let columns = try MarkerFile.geoJSON(Data("{\"type\":\"FeatureCollection\",\"features\":[\(dense)]}".utf8))
        #expect(columns.attributes.keys == ["name"] && columns.attributes.rowCount == 10)
        #expect(columns.markers.allSatisfy { $0.attributes.isEmpty })

        let s = try TestServer(.tcp)
        defer { s.stop() }
        let c = try s.client()
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/sparse.geojson"
        try sparse.write(to: URL(fileURLWithPath: path))
        _ = try createLayer(c, "A")
        let load = try Self.markerctl(["load", "A", path], url: s.url)
        #expect(load.status == 0 && load.stdout.hasPrefix("loaded 3000 markers into A (3000 created"), "\(load.stderr)")
        let ids = stride(from: 0, to: n, by: 211).map { "f\($0)" }
        let got = try c.getMarkers("A", ids: ids).markers
        #expect(got.count == ids.count)
        for m in got {
            let i = try #require(Int(m.id.dropFirst()))
            #expect(m.attributes == ["name": "place \(i)", "tag\(i)": "v\(i)"], "\(m.id): \(m.attributes)")
        }
    }

    /// Export writes every marker of a TILED layer, static, live (draggable) and hidden ones
    /// alike, and load gives them back identically (into another TILED layer).
    @Test func exportWritesEveryMarkerOfATiledLayerWithHiddenMarkers() throws {
        let s = try TestServer(.tcp)
        defer { s.stop() }
        let c = try s.client()
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Without the attribute named z_index (export writes the z_index field over it: see
        // exportLoadsBackAsTheSameMarkers).
        let markers = Self.randomMarkers(500, seed: testSeed()).map { m in
            var m = m
            m.attributes["z_index"] = nil
            return m
        }
        _ = try createLayer(c, "tiled", minMarkerCount: 1)
        _ = try createLayer(c, "copy", minMarkerCount: 1)
        _ = try c.upsertMarkers("tiled", markers)
        let stats = try c.layerStats("tiled")
        try #require(stats.mode == .tiled && stats.staticMarkerCount > 0 && stats.liveMarkerCount > 0 && stats.hiddenMarkerCount > 0)

        let exported = dir + "/t.geojson"
        let export = try Self.markerctl(["export", "tiled", exported, "--page-size", "70"], url: s.url)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout.hasPrefix("exported 500 markers of tiled to \(exported)"), "\(export.stdout)")
        #expect(export.stderr.contains("exporting tiled: 500/500 markers (100%)"), "\(export.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["t.geojson"])

        let reload = try Self.markerctl(["load", "copy", exported], url: s.url)
        #expect(reload.status == 0, "\(reload.stderr)")
        let ids = markers.map(\.id)
        let a = try c.getMarkers("tiled", ids: ids).markers.map(Self.summary).sorted()
        let b = try c.getMarkers("copy", ids: ids).markers.map(Self.summary).sorted()
        #expect(a.count == 500)
        #expect(mismatch(a, b) == nil)
        #expect(try c.layerStats("copy").hiddenMarkerCount == stats.hiddenMarkerCount)
    }

    /// tiles seed requests every tile of the range: afterwards GetTile of each of them is a cache
    /// hit (no tile rendered), and the summary counts them and the empty ones.
    @Test func seededTilesAreServedFromTheCache() throws {
        let s = try TestServer(.tcp)
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "t", minMarkerCount: 1)
        var rng = SplitMix64(seed: testSeed())
        _ = try c.upsertMarkers("t", (0..<300).map { marker("m\($0)", 45 + rng.unit() * 3, 5 + rng.unit() * 5) })
        let range = try TileRange(bbox: "5,45,10,48", zoom: "0-7")
        let rendersBefore = s.server.service.tileRenderCounts
        let seed = try Self.markerctl(["tiles", "seed", "t", "--zoom", "0-7", "--bbox", "5,45,10,48", "--concurrency", "3"], url: s.url)
        #expect(seed.status == 0, "\(seed.stderr)")
        #expect(seed.stdout.hasPrefix("seeded \(range.count) tiles of t ("), "\(seed.stdout)")
        #expect(seed.stderr.contains("seeding t: \(range.count)/\(range.count) tiles (100%)"), "\(seed.stderr)")
        let renders = s.server.service.tileRenderCounts
        let rendered = renders.fromScratch + renders.patched - rendersBefore.fromScratch - rendersBefore.patched
        #expect(rendered > 0)
        var empty = 0
        for t in range.allTiles() {
            let r: V1.GetTileResponse = try c.call("GetTile", V1.GetTileRequest(layerID: "t", z: UInt32(t.z), x: UInt32(t.x), y: UInt32(t.y)))
            empty += r.empty ? 1 : 0
        }
        let after = s.server.service.tileRenderCounts
        #expect(after.fromScratch == renders.fromScratch && after.patched == renders.patched)
        #expect(seed.stdout.contains("(\(empty) empty, "))
    }

    /// The tile range across the antimeridian is two column ranges, merged where they meet.
    @Test func tileRangeAcrossTheAntimeridian() throws {
        let r = try TileRange(bbox: "170,-50,-170,-30", zoom: "0-3")
        #expect(r.tiles(zoom: 0).columns == [0...0])
        #expect(r.tiles(zoom: 1).columns == [0...1])
        #expect(r.tiles(zoom: 3).columns == [0...0, 7...7] && r.tiles(zoom: 3).rows == 4...5)
        #expect(r.tiles(zoom: 2).columns == [0...0, 3...3] && r.tiles(zoom: 2).rows == 2...2)
        #expect(r.count == 1 + 2 + 2 + 2 * 2)
    }

    /// Every bad argument exits 2 with a message naming it, before any call (the URL has no server).
    @Test func badArgumentsAreRefusedClearly() throws {
        let cases: [([String], String)] = [
            (["tiles", "seed", "t"], "tiles seed needs --zoom A-B"),
            (["tiles", "seed", "t", "--zoom", "5-3"], "--zoom takes A-B"),
            (["tiles", "seed", "t", "--zoom", "x"], "--zoom takes A-B"),
            (["tiles", "seed", "t", "--zoom", "3-23"], "zoom 3-23 is not within 0-22"),
            (["tiles", "seed", "t", "--zoom", "3", "--bbox", "nan,0,1,1"], "bbox west nan is not within -180...180"),
            (["tiles", "seed", "t", "--zoom", "3", "--bbox", "0,0,1"], "--bbox takes WEST,SOUTH,EAST,NORTH"),
            (["tiles", "seed", "t", "--zoom", "3", "--bbox", "0,10,1,5"], "bbox south 10.0 is not below north 5.0"),
            (["tiles", "seed", "t", "--zoom", "3", "--bbox", "0,-95,1,5"], "bbox south -95.0 is not within -90...90"),
            (["tiles", "seed", "t", "--zoom", "3", "--bbox", "190,0,1,5"], "bbox west 190.0 is not within -180...180"),
            (["tiles", "seed", "t", "--zoom", "3", "--bbox", "1,0,1,5"], "bbox west and east are both 1.0"),
            (["tiles", "seed", "t", "--zoom", "3", "--size", "300"], "--size takes 256 or 512, not \"300\""),
            (["tiles", "seed", "t", "--zoom", "3", "--density", "4"], "--density takes 1 or 2 or 3, not \"4\""),
            (["tiles", "seed", "t", "--zoom", "3", "--concurrency", "0"], "--concurrency takes a whole number within 1...64"),
            (["tiles", "seed", "t", "--zoom", "0-10"], "zoom 0-10 over that bbox is 1398101 tiles, more than 1000000"),
            (["tiles", "seed", "t", "--zoom", "3", "extra"], "unexpected arguments: extra"),
            (["tiles", "warm", "t"], "unknown tiles subcommand \"warm\""),
            (["export", "t", "f.geojson", "--page-size", "0"], "--page-size takes a whole number within 1...100000"),
            (["export", "t"], "missing FILE.geojson"),
            (["load", "t", "f.csv", "--batch", "many"], "--batch takes a whole number within 1...100000, not \"many\""),
        ]
        for (arguments, message) in cases {
            let run = try Self.markerctl(arguments)
            #expect(run.status == 2 && run.stderr.contains(message), "\(arguments): \(run.status) \(run.stderr)")
        }
    }

    /// `markerctl COMMAND --help` prints the command's usage and an example of it, and exits 0.
    @Test func everyCommandsHelpHasAnExample() throws {
        let all = try Self.markerctl(["--help"])
        for command in ["layers", "register-icon", "load", "get", "remove", "clear", "tiles", "export", "snapshot", "info", "sign-url"] {
            #expect(all.stdout.contains("\n  \(command) "), "\(command) missing from markerctl --help")
            let run = try Self.markerctl([command, "--help"])
            #expect(run.status == 0 && run.stdout.contains("\n  \(command)") && run.stdout.contains("\nexample:\n  markerctl \(command)"),
                    "\(command): \(run.stdout)")
        }
    }
}
