import Foundation

/// A target from the issues and whether a figure meets it.
struct Target: Encodable {
    /// As printed, e.g. "<= 2x floor p99 at 10M".
    var text: String
    /// Whether the figure meets it.
    var met: Bool
    /// False when the target is stated for another size than the one measured (e.g. a 10M
    /// target checked on a 1M run): the status is then printed as indicative only.
    var atTargetSize: Bool = true

    var status: String {
        let word = met ? "PASS" : "MISS"
        return atTargetSize ? "**\(word)**" : "(\(word) at this size)"
    }

    private enum CodingKeys: String, CodingKey { case text, met, atTargetSize, status }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(text, forKey: .text)
        try c.encode(met, forKey: .met)
        try c.encode(atTargetSize, forKey: .atTargetSize)
        try c.encode(status, forKey: .status)
    }
}

/// One row of the result table; `--report` writes the rows as JSON (`Report`).
struct Row: Encodable {
    /// The marker count the row belongs to ("1M"), or "-" for rows that do not depend on it.
    var size: String
    var measure: String
    var value: String
    var unit: String
    /// The floor of the same payload sizes: "p50 / p99 µs @ sizes", or "".
    var floor: String = ""
    /// Latency / floor: "p50x / p99x", or a ratio to another figure (e.g. vs ephemeral).
    var ratio: String = ""
    var target: Target? = nil
    /// Free-form remark (what the figure includes, how many samples).
    var note: String = ""
    /// The timed calls' latencies in microseconds, for the rows that summarise a distribution
    /// (`--report` plots them); nil for the others. Not printed in the table.
    var samplesMicros: [Double]? = nil
    /// The interleaved floor's round trips of the same sizes, in microseconds, when the row has them.
    var floorSamplesMicros: [Double]? = nil
}

/// Collects rows and prints them as one markdown table.
final class Table {
    private(set) var rows: [Row] = []

    func add(_ row: Row) {
        rows.append(row)
        let t = row.target.map { "  [\($0.text): \($0.status)]" } ?? ""
        Progress.log("result: \(row.size) \(row.measure) = \(row.value) \(row.unit) \(row.ratio)\(t)")
    }

    /// A latency row: p50 / p99 with the floor of the same sizes and both ratios.
    func addLatency(size: String, measure: String, _ s: LatencySummary, floor: LatencySummary?, floorSizes: Floor.Sizes?,
                    target: ((_ p99Ratio: Double) -> Target)? = nil, note: String = "") {
        var row = Row(size: size, measure: measure, value: "\(Self.micros(s.p50)) / \(Self.micros(s.p99))",
                      unit: "µs p50 / p99", note: note, samplesMicros: s.sortedMicros)
        if let floor, let floorSizes {
            row.floorSamplesMicros = floor.sortedMicros
            row.floor = "\(Self.micros(floor.p50)) / \(Self.micros(floor.p99)) @ \(floorSizes)"
            let r50 = s.p50 / floor.p50, r99 = s.p99 / floor.p99
            row.ratio = String(format: "%.2fx / %.2fx", r50, r99)
            row.target = target?(r99)
        }
        add(row)
    }

    /// A latency row for an RPC series and its interleaved floor.
    func addLatency(size: String, measure: String, _ s: RPCTiming.Series,
                    target: ((_ p99Ratio: Double) -> Target)? = nil, note: String = "") {
        let sizes = s.timedSizes == s.sizes ? "" : "; timed calls' median sizes \(s.timedSizes)"
        let codec = "client protobuf encode + decode (not in the latency) \(Self.micros(s.clientCodec.p50)) / \(Self.micros(s.clientCodec.p99)) µs"
        // The two series are interleaved: a p99 ratio far off with many stalls on one side only
        // (`LatencySummary.stalls`) is a matter of which side they hit.
        let stalls = "calls >= \(Self.micros(LatencySummary.stallMicros)) µs \(s.latency.stalls) of \(s.latency.samples) (floor \(s.floor.stalls)), max \(Self.micros(s.latency.max)) µs (floor \(Self.micros(s.floor.max)))"
        addLatency(size: size, measure: measure, s.latency, floor: s.floor, floorSizes: s.sizes, target: target,
                   note: (note.isEmpty ? "" : note + "; ") + codec + sizes + "; " + stalls)
    }

    /// The markdown table.
    func markdown() -> String {
        let header = ["N", "Measure", "Value", "Unit", "Floor p50 / p99 µs (same bytes)", "Ratio", "Target", "Status", "Note"]
        var lines = ["| " + header.joined(separator: " | ") + " |",
                     "|" + header.map { _ in " --- " }.joined(separator: "|") + "|"]
        for r in rows {
            let cells = [r.size, r.measure, r.value, r.unit, r.floor, r.ratio, r.target?.text ?? "", r.target?.status ?? "", r.note]
            lines.append("| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Formatting

    /// "100k", "1M", "10M", "1.5M", or the plain number.
    static func count(_ n: Int) -> String {
        if n >= 1_000_000 && n % 100_000 == 0 {
            return n % 1_000_000 == 0 ? "\(n / 1_000_000)M" : String(format: "%.1fM", Double(n) / 1e6)
        }
        if n >= 1_000 && n % 1_000 == 0 { return "\(n / 1_000)k" }
        return "\(n)"
    }

    /// Bytes as "512 B", "12.3 KB", "4.5 MB" (powers of 1024).
    static func bytes(_ n: Int) -> String {
        let d = Double(n)
        if d < 1024 { return "\(n) B" }
        if d < 1024 * 1024 { return String(format: "%.1f KB", d / 1024) }
        if d < 1024 * 1024 * 1024 { return String(format: "%.1f MB", d / 1024 / 1024) }
        return String(format: "%.2f GB", d / 1024 / 1024 / 1024)
    }

    /// Microseconds: no decimals from 100 up, one below.
    static func micros(_ v: Double) -> String {
        v >= 100 ? String(format: "%.0f", v) : String(format: "%.1f", v)
    }

    /// A rate with thousands separators ("1,234,567").
    static func rate(_ v: Double) -> String {
        let f = NumberFormatter()
        f.numberStyle = .decimal
        f.maximumFractionDigits = 0
        return f.string(from: NSNumber(value: v.rounded())) ?? String(format: "%.0f", v)
    }

    /// Two decimals.
    static func fixed(_ v: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", v) }
}
