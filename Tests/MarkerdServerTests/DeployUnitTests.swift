import Foundation
import Testing

/// `deploy/markerd.service` stays hardened: `systemd-analyze security --offline=true` must rate
/// it 2.0 or lower (it rated 8.5 "EXPOSED" before the hardening lines; 1.2 with them).
@Suite struct DeployUnitTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let unit = root.appendingPathComponent("deploy/markerd.service").path
    /// systemd-analyze on PATH (systemd 250 or later reads a unit file with `--offline=true`), or nil.
    static let analyzer: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        .split(separator: ":").map { "\($0)/systemd-analyze" }
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static let maxExposure = 2.0

    @Test(.enabled(if: analyzer != nil, "systemd-analyze is not installed: the unit's exposure score is not checked"))
    func unitExposureIsAtMostTwo() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(Self.analyzer))
        process.arguments = ["security", "--offline=true", "--no-pager", Self.unit]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
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
