import MarkerdTestSupport
import Foundation
import MarkerdAPI
import MarkerdClient
import Testing

/// 1000 vehicles; v1 has an image icon and an attribute.
func fleet() -> [V1.Marker] {
    (0..<1000).map { i in
        marker("v\(i)", Double(i % 80), Double(i % 170)) { m in
            if i == 1 { m.icon = .iconID("dot"); m.attributes = ["driver": "Ada"] }
        }
    }
}

@Suite("a real markerd process over tcp://", .serialized)
struct ProcessTests {
    @Test("SIGTERM finishes, flushes and exits 0; a restart has every acknowledged write; resent keys apply nothing")
    func gracefulRestart() throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var p = try MarkerdProcess(arguments: ["--data-dir", dir])
        var c = try p.waitUntilReady()
        _ = try createLayer(c, "fleet")
        var req = V1.RegisterIconRequest()
        req.iconID = "dot"
        req.png = onePixelPNG
        _ = try c.registerIcon(req)
        let first = try c.upsertMarkers("fleet", fleet(), idempotencyKey: "load-1")
        _ = try c.moveMarkers("fleet", [move("v1", 50, 50)])
        _ = try c.removeMarkers("fleet", ids: ["v2"])
        p.kill(SIGTERM)
        #expect(p.waitForExit(timeout: 10) == 0, "markerd did not exit 0 within 10 s: \(p.stderrText())")

        p = try MarkerdProcess(arguments: ["--data-dir", dir])
        defer { p.kill(SIGKILL); _ = p.waitForExit(timeout: 5) }
        c = try p.waitUntilReady()
        #expect(try c.layerStats("fleet").markerCount == 999)
        let v1 = try #require(try c.getMarkers("fleet", ids: ["v1"]).markers.first)
        #expect(v1.position?.latitude == 50 && v1.icon == .iconID("dot") && v1.attributes == ["driver": "Ada"])
        // The same key after the restart: the first reply, and v1 is not moved back.
        let again = try c.upsertMarkers("fleet", fleet(), idempotencyKey: "load-1")
        #expect(again == first)
        #expect(try c.getMarkers("fleet", ids: ["v1"]).markers.first?.position?.latitude == 50)
        #expect(try c.layerStats("fleet").markerCount == 999)
        // A snapshot, then a restart from snapshot + journal.
        let snap = try c.createSnapshot()
        #expect(snap.markerCount == 999 && snap.sizeBytes > 0)
        _ = try c.upsertMarkers("fleet", [marker("after-snapshot", 1, 2)])
        p.kill(SIGTERM)
        #expect(p.waitForExit(timeout: 10) == 0)
        p = try MarkerdProcess(arguments: ["--data-dir", dir])
        c = try p.waitUntilReady()
        #expect(try c.layerStats("fleet").markerCount == 1000)
        #expect(try c.getMarkers("fleet", ids: ["v1"]).markers.first?.position?.latitude == 50)
        #expect(try c.getMarkers("fleet", ids: ["v2"]).missingIDs == ["v2"])
    }

    @Test("markerd runs with the environment it was given: it does not restart itself to set GLIBC_TUNABLES")
    func keepsTheCallersEnvironment() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["GLIBC_TUNABLES"] = nil
        let p = try MarkerdProcess(arguments: ["--ephemeral"], environment: environment)
        defer { p.kill(SIGKILL); _ = p.waitForExit(timeout: 5) }
        _ = try p.waitUntilReady()
        // /proc/PID/environ is the environment of the last exec.
        let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(p.process.processIdentifier)/environ"))
        let tunables = environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            .filter { $0.hasPrefix("GLIBC_TUNABLES=") }
        #expect(tunables.isEmpty)
    }

    @Test("SIGTERM during a snapshot: the snapshot is dropped, markerd exits 0 promptly, nothing is lost")
    func sigtermDuringSnapshot() throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var p = try MarkerdProcess(arguments: ["--data-dir", dir, "--snapshot-every-bytes", "0"])
        var c = try p.waitUntilReady()
        _ = try createLayer(c, "big")
        let n = 200_000
        for start in stride(from: 0, to: n, by: 50_000) {
            let batch: [V1.Marker] = (start..<start + 50_000).map { (i: Int) -> V1.Marker in
                let lat: Double = Double(i % 160) - 80.0
                let lon: Double = Double(i % 340) - 170.0
                return marker("m\(i)", lat, lon)
            }
            _ = try c.upsertMarkers("big", batch)
        }
        let url = p.url
        DispatchQueue.global().async { _ = try? MarkerdClient(url: url, timeout: .seconds(30)).createSnapshot() }
        // SIGTERM once the snapshot file is being written (or, on a fast host, already written).
        try waitUntil("the snapshot started") {
            try FileManager.default.contentsOfDirectory(atPath: dir).contains { $0.hasPrefix("snapshot-") }
        }
        let start = Date()
        p.kill(SIGTERM)
        #expect(p.waitForExit(timeout: 10) == 0, "markerd did not exit 0 within 10 s: \(p.stderrText())")
        #expect(Date().timeIntervalSince(start) < 10)
        p = try MarkerdProcess(arguments: ["--data-dir", dir])
        defer { p.kill(SIGTERM); _ = p.waitForExit(timeout: 10) }
        c = try p.waitUntilReady()
        #expect(try c.layerStats("big").markerCount == UInt64(n))
    }

    @Test("crash test: SIGKILL at seeded random moments loses no acknowledged write, batches all or nothing")
    func crashRecovery() throws {
        var rng = SplitMix64(seed: testSeed("crashRecovery"))
        let rounds = Int(ProcessInfo.processInfo.environment["CRASH_ROUNDS"] ?? "") ?? 8
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ledger = Ledger()
        let args = ["--data-dir", dir, "--snapshot-every-bytes", "300000"]
        for round in 0..<rounds {
            let p = try MarkerdProcess(arguments: args)
            let c = try p.waitUntilReady()
            try ledger.verify(c, round: round)
            if round == 0 { _ = try createLayer(c, "crash") }
            let stop = StopFlag()
            let url = p.url
            let group = DispatchGroup()
            for w in 0..<4 {
                let workerSeed = rng.next()
                DispatchQueue.global().async(group: group) {
                    var r = SplitMix64(seed: workerSeed)
                    guard let client = try? MarkerdClient(url: url, timeout: .seconds(3)) else { return }
                    var n = 0
                    while !stop.isSet {
                        n += 1
                        let name = "r\(round)-w\(w)-b\(n)"
                        if r.next() % 4 == 0, let victim = ledger.randomAcknowledged(&r) {
                            ledger.begin(remove: victim)
                            if (try? client.removeMarkers("crash", ids: victim.ids)) != nil { ledger.acknowledged(remove: victim) }
                        } else {
                            let size = Int(r.next() % 200) + 1
                            let batch = Batch(name: name, ids: (0..<size).map { "\(name)-\($0)" })
                            ledger.begin(upsert: batch)
                            let markers = batch.ids.map { marker($0, Double(r.next() % 160) - 80, Double(r.next() % 360) - 180) }
                            if (try? client.upsertMarkers("crash", markers)) != nil { ledger.acknowledged(upsert: batch) }
                        }
                        if w == 0 && r.next() % 25 == 0 { _ = try? client.createSnapshot() }
                    }
                }
            }
            Thread.sleep(forTimeInterval: Double(rng.next() % 600 + 150) / 1000)
            p.kill(SIGKILL)
            _ = p.waitForExit(timeout: 10)
            stop.set()
            group.wait()
        }
        let p = try MarkerdProcess(arguments: args)
        defer { p.kill(SIGTERM); _ = p.waitForExit(timeout: 10) }
        let c = try p.waitUntilReady()
        try ledger.verify(c, round: rounds)
        #expect(ledger.acknowledgedCount > 0)
    }
}

struct Batch: Hashable, Sendable {
    var name: String
    var ids: [String]
}

final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}

/// What the writers know: batches acknowledged present, acknowledged removed, or in doubt
/// (sent, no reply before the kill: all or nothing either way).
final class Ledger: @unchecked Sendable {
    private let lock = NSLock()
    private var present: [String: Batch] = [:]
    private var removed: [String: Batch] = [:]
    private var doubtful: [String: Batch] = [:]
    private var everAcknowledged = 0

    var acknowledgedCount: Int { lock.lock(); defer { lock.unlock() }; return everAcknowledged }

    func begin(upsert b: Batch) { lock.lock(); doubtful[b.name] = b; lock.unlock() }
    func acknowledged(upsert b: Batch) {
        lock.lock(); doubtful[b.name] = nil; present[b.name] = b; everAcknowledged += 1; lock.unlock()
    }
    func begin(remove b: Batch) { lock.lock(); present[b.name] = nil; doubtful[b.name] = b; lock.unlock() }
    func acknowledged(remove b: Batch) {
        lock.lock(); doubtful[b.name] = nil; removed[b.name] = b; everAcknowledged += 1; lock.unlock()
    }
    func randomAcknowledged(_ r: inout SplitMix64) -> Batch? {
        lock.lock(); defer { lock.unlock() }
        guard !present.isEmpty else { return nil }
        let keys = Array(present.keys)
        let b = present[keys[Int(r.next() % UInt64(keys.count))]]!
        present[b.name] = nil  // one writer owns it now
        return b
    }

    /// Checks the server against the ledger, then settles doubtful batches by what the server has.
    func verify(_ c: MarkerdClient, round: Int) throws {
        guard round > 0 else { return }
        lock.lock(); defer { lock.unlock() }
        for b in present.values {
            let r = try c.getMarkers("crash", ids: b.ids)
            #expect(r.missingIDs.isEmpty, "round \(round): acknowledged batch \(b.name) lost \(r.missingIDs.count) of \(b.ids.count)")
        }
        for b in removed.values {
            let r = try c.getMarkers("crash", ids: b.ids)
            #expect(r.markers.isEmpty, "round \(round): acknowledged removal of \(b.name) undone for \(r.markers.count) markers")
        }
        for b in doubtful.values {
            let r = try c.getMarkers("crash", ids: b.ids)
            #expect(r.markers.isEmpty || r.missingIDs.isEmpty,
                    "round \(round): batch \(b.name) half applied: \(r.markers.count) of \(b.ids.count)")
            doubtful[b.name] = nil
            if r.missingIDs.isEmpty { present[b.name] = b } else { removed[b.name] = b }
        }
    }
}
