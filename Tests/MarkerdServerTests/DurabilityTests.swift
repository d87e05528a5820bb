import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdServer
import MarkerdTestSupport
import Synchronization
import Testing
@testable import MarkerdJournal
@testable import MarkerdService

/// Journal failures, damaged snapshots and missing segments, end to end through a server.
@Suite struct DurabilityTests {
    func ids(_ client: MarkerdClient, _ wanted: [String]) throws -> [String] {
        try client.getMarkers("L", ids: wanted).markers.map(\.id).sorted()
    }

    /// After a journal write failure (disk full) writes are refused (UNAVAILABLE) and /readyz
    /// says why (503) while /healthz stays 200; the write that was in flight waits and is
    /// acknowledged once the journal writes again, and so are new writes, without a restart.
    /// After a restart every acknowledged write is there and the refused one is not.
    @Test func writesResumeOnceTheJournalWritesAgain() throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let s = try TestServer(dataDirectory: dir) { $0.httpAddress = "127.0.0.1:0" }
            defer { s.stop() }
            let port = try #require(s.server.gateway).boundPort
            let c = try s.client()
            _ = try createLayer(c, "L")
            _ = try c.upsertMarkers("L", [marker("a", 1, 1)])
            let ready = try RawHTTP.request(port: port, "GET", "/readyz")
            #expect(ready.status == 200 && ready.text == "ready\n")
            let metrics = try RawHTTP.request(port: port, "GET", "/metrics").text
            #expect(metrics.contains("\nmarkerd_ready 1\n") && metrics.contains("\nmarkerd_writes_refused 0\n"))

            let journal = try #require(s.server.service.journal)
            journal.faults.failWrites.store(true, ordering: .relaxed)
            // "b" gets past the check and is applied and appended; its write fails, and its
            // reply waits while the journal retries.
            let inFlight = try s.client(timeout: .seconds(120))
            let bDone = DispatchSemaphore(value: 0)
            let bStatus = Mutex<V1.Code?>(.unknown)
            Thread.detachNewThread {
                let code = statusCode { _ = try inFlight.upsertMarkers("L", [marker("b", 2, 2)]) }
                bStatus.withLock { $0 = code }
                bDone.signal()
            }
            try waitUntil("writes are refused") { s.server.service.readiness.writesRefused != nil }
            let notReady = try RawHTTP.request(port: port, "GET", "/readyz")
            #expect(notReady.status == 503)
            #expect(notReady.text.hasPrefix("writes refused: ") && notReady.text.contains("No space left on device"))
            #expect(notReady.text.split(separator: "\n").count == 1)
            #expect(try RawHTTP.request(port: port, "GET", "/healthz").status == 200)
            let refusedMetrics = try RawHTTP.request(port: port, "GET", "/metrics").text
            #expect(refusedMetrics.contains("\nmarkerd_ready 0\n") && refusedMetrics.contains("\nmarkerd_writes_refused 1\n"))
            // Refused before it is applied: "c" never shows.
            #expect(statusCode { _ = try c.upsertMarkers("L", [marker("c", 3, 3)]) } == .unavailable)
            #expect(try ids(c, ["c"]).isEmpty)

            journal.faults.failWrites.store(false, ordering: .relaxed)
            bDone.wait()
            #expect(bStatus.withLock { $0 } == nil)
            #expect(s.server.service.readiness.writesRefused == nil)
            #expect(try RawHTTP.request(port: port, "GET", "/readyz").status == 200)
            _ = try c.upsertMarkers("L", [marker("d", 4, 4)])
            #expect(try ids(c, ["a", "b", "c", "d"]) == ["a", "b", "d"])

            s.server.service.beginDraining()   // as stop() does first
            let draining = try RawHTTP.request(port: port, "GET", "/readyz")
            #expect(draining.status == 503 && draining.text == "draining: markerd is shutting down\n")
        }
        let again = try TestServer(dataDirectory: dir)
        defer { again.stop() }
        #expect(try ids(again.client(), ["a", "b", "c", "d"]) == ["a", "b", "d"])
    }

    /// Two snapshots, then one flipped byte in the newest: `markerd check` calls the directory
    /// recoverable, and a restart falls back to the previous snapshot plus the journal with
    /// every acknowledged write.
    @Test func damagedNewestSnapshotFallsBackWithAllAcknowledgedData() throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let all = (0..<300).map { "m\($0)" }
        var newest = ""
        do {
            let s = try TestServer(dataDirectory: dir)
            defer { s.stop() }
            let c = try s.client()
            _ = try createLayer(c, "L")
            for (round, chunk) in stride(from: 0, to: all.count, by: 100).enumerated() {
                _ = try c.upsertMarkers("L", all[chunk..<chunk + 100].map { marker($0, Double(round), 1) })
                if round < 2 { newest = URL(fileURLWithPath: try c.createSnapshot().path).lastPathComponent }
            }
        }
        let path = dir + "/" + newest
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(DataDirectoryTool.run("check", directory: dir) == 0)

        let lines = Mutex<[String]>([])
        var config = MarkerdConfiguration()
        config.listenURLs = ["inproc://durability-\(UInt64.random(in: 0...UInt64.max))"]
        config.dataDirectory = dir
        let server = try MarkerdNode(configuration: config) { line in lines.withLock { $0.append(line) } }
        try server.start()
        defer { server.stop() }
        let c = try MarkerdClient(url: server.boundURLs[0], timeout: .seconds(20))
        #expect(try c.layerStats("L").markerCount == UInt64(all.count))
        #expect(mismatch(try ids(c, all), all.sorted()) == nil)
        #expect(lines.withLock { $0 }.contains { $0.contains(newest) && $0.contains("damaged") })
    }

    /// The newest journal segment deleted after a snapshot: start refuses naming it, and
    /// `markerd check` says not recoverable (exit 1).
    @Test func deletedNewestSegmentRefusesToStart() throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let s = try TestServer(dataDirectory: dir)
            defer { s.stop() }
            let c = try s.client()
            _ = try createLayer(c, "L")
            _ = try c.upsertMarkers("L", (0..<10).map { marker("a\($0)", 1, 1) })
            _ = try c.createSnapshot()
            _ = try c.upsertMarkers("L", (0..<10).map { marker("b\($0)", 1, 1) })
        }
        let newest = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("journal-") }.sorted().last)
        try FileManager.default.removeItem(atPath: dir + "/" + newest)
        do {
            _ = try TestServer(dataDirectory: dir)
            Issue.record("started without \(newest)")
        } catch {
            #expect("\(error)".contains(newest))
        }
        #expect(DataDirectoryTool.run("check", directory: dir) == 1)
    }
}
