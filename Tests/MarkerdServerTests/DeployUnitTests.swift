import Foundation
import Testing

/// `deploy/markerd.service` stays hardened: `systemd-analyze security --offline=true` must rate
/// it 2.0 or lower (it rated 8.5 "EXPOSED" before the hardening lines; 1.2 with them). It and the
/// Makefile's `run` and `bench` start markerd with the glibc tunables markerd does not set itself.
@Suite struct DeployUnitTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let unit = root.appendingPathComponent("deploy/markerd.service").path
    /// systemd-analyze on PATH (systemd 250 or later reads a unit file with `--offline=true`), or nil.
    static let analyzer: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        .split(separator: ":").map { "\($0)/systemd-analyze" }
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static let maxExposure = 2.0
    /// Transparent huge pages for the heap (glibc reads its tunables only at startup).
    static let tunables = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"

    @Test func unitSetsTheMallocTunables() throws {
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        let environment = text.split(separator: "\n").filter { $0.hasPrefix("Environment=") }
        #expect(environment == ["Environment=\(Self.tunables)"])
    }

    /// Runs `executable` with `arguments`; its exit status and its standard output and error.
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test(arguments: ["run", "bench"])
    func makefileSetsTheMallocTunables(target: String) throws {
        // `make -n` prints the recipes without running them, in an environment without GLIBC_TUNABLES
        // (nor an outer make's flags and variables, as under `make test`).
        let (status, text) = try Self.run("/usr/bin/env", ["-u", "GLIBC_TUNABLES", "-u", "MAKEFLAGS", "-u", "MFLAGS", "-u", "MAKELEVEL",
                                                           "make", "-n", "-C", Self.root.path, target])
        #expect(status == 0, "\(text.prefix(2000))")
        let binary = target == "run" ? ".build/release/markerd " : ".build/release/marker-bench "
        let line = text.split(separator: "\n").first { $0.contains(binary) }
        #expect(line?.hasPrefix("\(Self.tunables) \(binary)") == true, "\(text.prefix(2000))")
    }

    @Test(.enabled(if: analyzer != nil, "systemd-analyze is not installed: the unit's exposure score is not checked"))
    func unitExposureIsAtMostTwo() throws {
        let (_, text) = try Self.run(try #require(Self.analyzer), ["security", "--offline=true", "--no-pager", Self.unit])
        // "→ Overall exposure level for markerd.service: 1.2 OK 🙂"
        let line = try #require(text.split(separator: "\n").first { $0.contains("Overall exposure level") },
                                "no score in systemd-analyze's output:\n\(text)")
        let fields = line.split(separator: " ")
        let scoreIndex = try #require(fields.firstIndex { $0.hasSuffix("markerd.service:") }.map { $0 + 1 })
        let score = try #require(fields.indices.contains(scoreIndex) ? Double(fields[scoreIndex]) : nil, "\(line)")
        let failing = text.split(separator: "\n").filter { $0.hasPrefix("✗") }.joined(separator: "\n")
        #expect(score <= Self.maxExposure, "exposure \(score) > \(Self.maxExposure); open items:\n\(failing)")
    }
}
