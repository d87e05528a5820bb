import Foundation

/// `--report DIR`: the table as DIR/report.md, the rows as DIR/rows.json, and the PNG plots that
/// Benchmarks/plot_report.py draws from rows.json (it also adds a section linking them to report.md).
enum Report {
    /// rows.json, what plot_report.py reads: the run's header facts and every row of the table,
    /// with the latency samples of the rows that have them (microseconds, rounded to 0.1).
    struct Document: Encodable {
        /// When the run started (ISO 8601).
        var started: String
        /// The machine line of the table's header.
        var machine: String
        /// `Options.summary`.
        var options: String
        var rows: [Row]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Creates `dir` and its parents if missing; run before the benchmark, so that a directory that
    /// cannot be made fails at once rather than after the run.
    static func prepare(_ dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    /// Writes `markdown` to DIR/report.md and `document` to DIR/rows.json, then runs
    /// `python3 plotScript DIR/rows.json --out DIR` (its output goes to standard error).
    /// Throws `Failure` when the script cannot start or exits non-zero (e.g. python3 without
    /// matplotlib); the two files are written by then.
    static func write(markdown: String, document: Document, dir: String, plotScript: String) throws {
        let url = URL(fileURLWithPath: dir)
        try Data((markdown + "\n").utf8).write(to: url.appendingPathComponent("report.md"))
        var rounded = document
        rounded.rows = document.rows.map { row in
            var r = row
            r.samplesMicros = row.samplesMicros?.map { ($0 * 10).rounded() / 10 }
            r.floorSamplesMicros = row.floorSamplesMicros?.map { ($0 * 10).rounded() / 10 }
            return r
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let rowsURL = url.appendingPathComponent("rows.json")
        try encoder.encode(rounded).write(to: rowsURL)
        Progress.log("report: wrote \(url.appendingPathComponent("report.md").path) and \(rowsURL.path); plotting")

        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", plotScript, rowsURL.path, "--out", dir]
        p.standardOutput = FileHandle.standardError
        do { try p.run() } catch { throw Failure(description: "cannot run python3 \(plotScript): \(error)") }
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw Failure(description: "\(plotScript) exited with status \(p.terminationStatus) (python3 needs matplotlib: scripts/install-deps.sh --bench); "
                + "report.md has the table, and `python3 \(plotScript) \(rowsURL.path) --out \(dir)` redraws the plots")
        }
    }
}
