import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdCore

/// Attributes (issue 36, item 5; `--only attributes`): the synthetic layer's N markers loaded
/// through RPC (BulkLoader, as the load row of `RPCBench`) plain and with three realistic
/// attributes (`name` 5-25 bytes, `category` city / town / village, `population`) as columns
/// (`AttributeColumns`, as `markerctl load` sends a file's attributes), each load
/// into a fresh `markerd --ephemeral`, alternating, five times each (the median rate counts:
/// the machine is shared). Rows: the load rate with attributes and its ratio to the plain rate
/// of the same run (target >= 0.8x), and the bytes per marker the attributes add (layer
/// `approximate_bytes` with minus without, and the VmRSS deltas' difference) against their
/// encoded size (target <= encoded + 8 B).
struct AttributeBench {
    static let layerID = "places"

    let options: Options
    let layer: SyntheticLayer
    let markers: [V1.Marker]
    let table: Table

    private var n: Int { layer.count }
    private var label: String { Table.count(n) }

    /// One load into a fresh markerd: its result, the layer's approximate bytes and the VmRSS
    /// the load added.
    private struct Load {
        var result: Loading.Result
        var approximateBytes: Int
        var residentBytes: Double
    }

    func run() throws {
        var columns = AttributeColumns(keys: ["name", "category", "population"])
        var encoded = 0
        for i in markers.indices {
            let a = Self.attributes(i)
            for k in columns.keys { columns.append(a[k]) }
            encoded += AttributeEncoding.encode(a).count
        }
        let host = HostReference.measure()
        table.add(host.row(when: "before the attribute loads"))
        var plain: [Load] = [], withAttributes: [Load] = []
        for run in 0..<(options.quick ? 1 : 5) {
            plain.append(try load(markers, "plain \(run + 1)"))
            withAttributes.append(try load(markers, attributes: columns, "3 attributes \(run + 1)"))
        }
        func median(_ loads: [Load]) -> Load { loads.sorted { $0.result.markersPerSecond < $1.result.markersPerSecond }[loads.count / 2] }
        let p = median(plain), a = median(withAttributes)
        let ratio = a.result.markersPerSecond / p.result.markersPerSecond
        let rates = { (loads: [Load]) in loads.map { Table.rate($0.result.markersPerSecond) }.joined(separator: ", ") }
        table.add(Row(size: label, measure: "load with 3 attributes (name, category, population) via RPC (BulkLoader 50k x 4, attributes as columns, fresh server, ephemeral)",
                      value: Table.rate(a.result.markersPerSecond), unit: "markers/s",
                      ratio: String(format: "%.2fx plain", ratio),
                      target: Target(text: ">= 0.8x the plain load", met: ratio >= 0.8),
                      note: "median of \(withAttributes.count) loads (\(rates(withAttributes))); plain \(Table.rate(p.result.markersPerSecond)) markers/s, "
                        + "median of (\(rates(plain))); \(a.result.cpuNote); plain: \(p.result.cpuNote)"))
        let encodedPerMarker = Double(encoded) / Double(n)
        let accounted = Double(a.approximateBytes - p.approximateBytes) / Double(n)
        let resident = (a.residentBytes - p.residentBytes) / Double(n)
        table.add(Row(size: label, measure: "bytes per marker with 3 attributes (layer approximate_bytes, with minus without)",
                      value: Table.fixed(accounted), unit: "B/marker",
                      target: Target(text: "<= encoded size + 8 B", met: accounted <= encodedPerMarker + 8),
                      note: String(format: "encoded size %.2f B/marker (the Marker.attributes field's protobuf bytes); VmRSS delta with minus without %.1f B/marker",
                                   encodedPerMarker, resident)))
    }

    private func load(_ markers: [V1.Marker], attributes: AttributeColumns? = nil, _ what: String) throws -> Load {
        let server = try MarkerdProcess(path: options.markerdPath, arguments: ["--ephemeral"], echo: options.verbose)
        defer { server.stop() }
        let client = server.client
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: Self.layerID, options: nil))
        usleep(200_000)
        let rssEmpty = server.residentBytes
        let result = try Loading.load(client, serverPID: server.pid, markers, attributes: attributes, into: Self.layerID, label: "[\(label)] load \(what)")
        usleep(500_000)
        let stats = try client.layerStats(Self.layerID)
        guard stats.markerCount == UInt64(markers.count) else { throw BenchError("\(what): \(stats.markerCount) markers loaded of \(markers.count)") }
        return Load(result: result, approximateBytes: Int(stats.approximateBytes), residentBytes: Double(server.residentBytes) - Double(rssEmpty))
    }

    static let syllables = ["San", "ta", "Mar", "ia", "del", "Río", "Nord", "berg", "ville", "ham", "Ōsa", "ka", "Kö", "ln",
                            "Vale", "ncia", "Port", "o", "Lin", "coln", "shire", "Bad", "Dürk", "heim"]

    /// Marker `i`'s attributes: a place name of 5-25 bytes, a category (1 city, 9 towns, 30
    /// villages in 40) and a population that fits it.
    static func attributes(_ i: Int) -> [String: String] {
        var h = UInt64(i) &* 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            h ^= h >> 29
            h = h &* 0xBF58_476D_1CE4_E5B9
            return Int(h >> 33)
        }
        var name = ""
        while name.utf8.count < 5 || (name.utf8.count < 25 && next() % 3 != 0) {
            let s = syllables[next() % syllables.count]
            if name.utf8.count + s.utf8.count > 25 { break }
            name += name.isEmpty || next() % 4 != 0 ? s : " " + s
        }
        while name.utf8.count < 5 { name += "a" }
        let k = i % 40
        let (category, population) = k == 0 ? ("city", 100_000 + next() % 9_900_000)
            : k < 10 ? ("town", 2_000 + next() % 98_000) : ("village", 50 + next() % 1_950)
        return ["name": name, "category": category, "population": String(population)]
    }
}
