import Foundation
import MarkerdAPI
import MarkerdClient

/// Durability costs for one marker count N, each run on a fresh markerd:
/// 1. `--ephemeral`: load rate (the reference).
/// 2. `--data-dir D1 --fsync off`: load rate; SIGTERM; restart from the journal alone.
/// 3. `--data-dir D2 --fsync always`: load rate and journal bytes per marker; CreateSnapshot
///    (snapshot bytes per marker); 10k more upserts and 10k moves; SIGTERM; restart from the
///    snapshot plus the journal tail.
/// Background snapshots are off (`--snapshot-every-bytes 0`) so the journal figures are whole.
/// A restart is timed from process launch until the first GetServerInfo reply.
struct DurabilityBench {
    static let layerID = "durable"
    /// Markers upserted (and moves made) after the snapshot, before the restart.
    static let writesAfterSnapshot = 10_000

    let options: Options
    let layer: SyntheticLayer
    let markers: [V1.Marker]
    let table: Table

    private var n: Int { layer.count }
    private var label: String { Table.count(n) }

    func run() throws {
        let root = URL(fileURLWithPath: options.dataRoot)
            .appendingPathComponent("marker-bench-\(getpid())-\(n)").path
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer {
            if options.keepData { Progress.log("[\(label)] kept the data directories under \(root)") }
            else { try? FileManager.default.removeItem(atPath: root) }
        }
        let offDir = root + "/fsync-off", alwaysDir = root + "/fsync-always"

        if options.restartOnly {
            // The restart alone: --fsync off writes the same journal and snapshot, faster.
            let restart = try snapshotAndRestart(offDir, fsync: "off")
            addSnapshotRows(restart)
            return
        }

        // 1. Ephemeral reference.
        let ephemeralLoad = try loadFresh(arguments: ["--ephemeral"], name: "ephemeral").load
        let ephemeral = ephemeralLoad.markersPerSecond

        // 2. fsync off, then restart from the journal only.
        let off = try loadFresh(arguments: durable(offDir, fsync: "off"), name: "fsync off")
        off.server.stop()
        let journalOnly = try restart(durable(offDir, fsync: "off"), expecting: n, name: "restart journal only")
        journalOnly.server.stop()

        // 3. fsync always: journal and snapshot sizes, restart from snapshot + journal tail.
        let always = try snapshotAndRestart(alwaysDir, fsync: "always")

        table.add(Row(size: label, measure: "load via RPC, --ephemeral (fresh server)", value: Table.rate(ephemeral),
                      unit: "markers/s", ratio: "1.00x", note: "BulkLoader 50k x 4; " + ephemeralLoad.cpuNote))
        table.add(Row(size: label, measure: "load via RPC, --data-dir --fsync off", value: Table.rate(off.load.markersPerSecond), unit: "markers/s",
                      ratio: String(format: "%.2fx ephemeral", off.load.markersPerSecond / ephemeral), note: off.load.cpuNote))
        table.add(Row(size: label, measure: "load via RPC, --data-dir --fsync always", value: Table.rate(always.load.markersPerSecond), unit: "markers/s",
                      ratio: String(format: "%.2fx ephemeral", always.load.markersPerSecond / ephemeral),
                      target: Target(text: ">= 0.5x ephemeral (batched)", met: always.load.markersPerSecond / ephemeral >= 0.5),
                      note: always.load.cpuNote))
        table.add(Row(size: label, measure: "journal bytes per marker (upserts, before snapshot)",
                      value: Table.fixed(Double(always.journalBytes) / Double(n)), unit: "B/marker",
                      note: "journal-*.log \(Table.bytes(always.journalBytes)); ids average \(Table.fixed(layer.averageIDBytes, 2)) B"))
        addSnapshotRows(always)
        table.add(Row(size: label, measure: "restart: journal only (no snapshot)",
                      value: Table.fixed(journalOnly.server.secondsUntilAnswering, 2), unit: "s",
                      note: String(format: "launch until first reply, markerd CPU %.2f s; ", journalOnly.server.cpuSecondsUntilAnswering) + journalOnly.recoveryLine))
    }

    /// What `snapshotAndRestart` measured.
    private struct SnapshotRestart {
        var load: Loading.Result
        var journalBytes: Int
        var snapshotBytes: Int
        var snapshot: V1.CreateSnapshotResponse
        var snapshotSeconds: Double
        var restart: (server: MarkerdProcess, recoveryLine: String)
    }

    /// Loads every marker into a fresh markerd on `dir`, takes a snapshot, writes
    /// `writesAfterSnapshot` more upserts and moves, stops it and times the restart.
    private func snapshotAndRestart(_ dir: String, fsync: String) throws -> SnapshotRestart {
        let loaded = try loadFresh(arguments: durable(dir, fsync: fsync), name: "fsync \(fsync)")
        let journalBytes = Self.bytes(in: dir, prefix: "journal-", suffix: ".log")
        Progress.log("[\(label)] CreateSnapshot")
        let (snap, snapTime) = try timed { try loaded.server.client.createSnapshot() }
        let snapshotBytes = Self.bytes(in: dir, prefix: "snapshot-", suffix: ".snap")
        try writeMore(loaded.server.client)
        loaded.server.stop()
        let restarted = try restart(durable(dir, fsync: fsync), expecting: n + Self.writesAfterSnapshot,
                                    name: "restart snapshot + journal")
        restarted.server.stop()
        return SnapshotRestart(load: loaded.load, journalBytes: journalBytes, snapshotBytes: snapshotBytes,
                               snapshot: snap, snapshotSeconds: snapTime.seconds, restart: restarted)
    }

    /// The snapshot size and restart rows.
    private func addSnapshotRows(_ r: SnapshotRestart) {
        table.add(Row(size: label, measure: "snapshot bytes per marker",
                      value: Table.fixed(Double(r.snapshotBytes) / Double(n)), unit: "B/marker",
                      note: String(format: "snapshot-*.snap %@; CreateSnapshot took %.2f s (server says %.2f s)",
                                   Table.bytes(r.snapshotBytes), r.snapshotSeconds, Double(r.snapshot.durationMs) / 1000)))
        let server = r.restart.server
        table.add(Row(size: label, measure: "restart: snapshot + journal tail (\(Table.count(Self.writesAfterSnapshot)) upserts, \(Table.count(Self.writesAfterSnapshot)) moves)",
                      value: Table.fixed(server.secondsUntilAnswering, 2), unit: "s",
                      target: Target(text: "< 10 s at 10M", met: server.secondsUntilAnswering < 10,
                                     atTargetSize: n >= 10_000_000),
                      note: String(format: "launch until first reply, markerd CPU %.2f s; ", server.cpuSecondsUntilAnswering) + r.restart.recoveryLine))
    }

    private func durable(_ dir: String, fsync: String) -> [String] {
        ["--data-dir", dir, "--fsync", fsync, "--snapshot-every-bytes", "0"]
    }

    /// Starts markerd with `arguments`, creates the layer and loads every marker. The server is
    /// left running.
    private func loadFresh(arguments: [String], name: String) throws -> (server: MarkerdProcess, load: Loading.Result) {
        let server = try MarkerdProcess(path: options.markerdPath, arguments: arguments, echo: options.verbose)
        do {
            _ = try server.client.createLayer(V1.CreateLayerRequest(layerID: Self.layerID, options: nil))
            let s = try Loading.load(server.client, serverPID: server.pid, markers, into: Self.layerID, label: "[\(label)] \(name)")
            if arguments.contains("--ephemeral") { server.stop() }
            return (server, s)
        } catch {
            server.stop()
            throw error
        }
    }

    /// Starts markerd on an existing data directory, timing until it answers, and checks the
    /// recovered marker count.
    private func restart(_ arguments: [String], expecting: Int, name: String) throws -> (server: MarkerdProcess, recoveryLine: String) {
        Progress.log("[\(label)] \(name): starting markerd")
        let server = try MarkerdProcess(path: options.markerdPath, arguments: arguments, echo: options.verbose)
        Progress.log(String(format: "[%@] %@: answering after %.2f s with %llu markers", label, name,
                            server.secondsUntilAnswering, server.info.markers))
        guard server.info.markers == UInt64(expecting) else {
            server.stop()
            throw BenchError("\(name): recovered \(server.info.markers) markers, expected \(expecting)")
        }
        // markerd logs "recovered L layers, M markers, I icons in S s (snapshot ..., R journal records replayed)".
        let line = server.child.logLines(containing: "recovered ").last
        let recovery = line.flatMap { l in l.range(of: "recovered ").map { "markerd: " + l[$0.lowerBound...] } } ?? ""
        return (server, recovery)
    }

    /// After the snapshot: upserts `writesAfterSnapshot` new markers and moves as many, in
    /// batches of 1,000, so the restart replays a journal tail too.
    private func writeMore(_ client: MarkerdClient) throws {
        var rng = SeededRNG(seed: options.seed &+ 4)
        let extra = (0..<Self.writesAfterSnapshot).map { k -> V1.Marker in
            var m = markers[rng.index(n)]
            m.id = SyntheticLayer.id(n + k)
            return m
        }
        for start in stride(from: 0, to: extra.count, by: 1000) {
            _ = try client.upsertMarkers(Self.layerID, Array(extra[start..<min(extra.count, start + 1000)]))
        }
        for _ in 0..<(Self.writesAfterSnapshot / 1000) {
            _ = try client.moveMarkers(Self.layerID, layer.randomAPIMoves(1000, &rng))
        }
    }

    /// Total size of the files in `dir` named prefix...suffix, in bytes.
    static func bytes(in dir: String, prefix: String, suffix: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(suffix) }.reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: dir + "/" + name))?[.size] as? NSNumber
            return total + (size?.intValue ?? 0)
        }
    }
}
