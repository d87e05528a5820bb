import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTestSupport

/// A cluster on loopback for one test: three `nats-server -js` clustered over routes (stores in
/// a temporary directory) and up to three markerd replicas of group "default" on them, each a
/// real process (``MarkerdProcess``). Ports are free loopback ports; everything is killed and
/// the directory removed by ``stop()`` (and on deinit).
final class ClusterHarness {
    let dir: URL
    let natsBinary: String
    let clientPorts: [Int]
    let routePorts: [Int]
    private(set) var nats: [Process?]
    let rpcPorts: [Int]
    let httpPorts: [Int]
    private(set) var replicas: [MarkerdProcess?]

    /// Starts the three NATS servers (not the replicas: `startReplica`).
    init(replicas count: Int = 3) throws {
        guard let binary = natsServerBinary() else { throw MarkerdProcess.ProcessError(message: natsServerMissing) }
        natsBinary = binary
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("markerd-cluster-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        clientPorts = (0..<3).map { _ in MarkerdProcess.freePort() }
        routePorts = (0..<3).map { _ in MarkerdProcess.freePort() }
        rpcPorts = (0..<count).map { _ in MarkerdProcess.freePort() }
        httpPorts = (0..<count).map { _ in MarkerdProcess.freePort() }
        nats = [nil, nil, nil]
        replicas = Array(repeating: nil, count: count)
        for i in 0..<3 { try startNats(i) }
    }

    deinit { stop() }

    /// `nats://` URLs of the three servers, comma-separated (markerd's `--cluster`).
    var natsURLs: String { clientPorts.map { "nats://127.0.0.1:\($0)" }.joined(separator: ",") }

    /// Starts NATS server `i` on its ports and store (kept across restarts).
    func startNats(_ i: Int) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: natsBinary)
        let routes = routePorts.enumerated().filter { $0.offset != i }.map { "nats://127.0.0.1:\($0.element)" }.joined(separator: ",")
        p.arguments = ["-js", "-sd", dir.appendingPathComponent("nats\(i)").path, "-a", "127.0.0.1", "-p", "\(clientPorts[i])",
                       "-n", "n\(i)", "--cluster_name", "markerd-test", "--cluster", "nats://127.0.0.1:\(routePorts[i])",
                       "--routes", routes]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        nats[i] = p
    }

    /// kill -9 of NATS server `i`; waits until it is gone.
    func killNats(_ i: Int) {
        guard let p = nats[i] else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        nats[i] = nil
    }

    /// Starts markerd replica `i` (`--node-id r<i>`, its data directory, an HTTP gateway) and
    /// returns a client of it once it answers.
    @discardableResult
    func startReplica(_ i: Int, extra: [String] = []) throws -> MarkerdClient {
        let data = dir.appendingPathComponent("r\(i)").path
        let p = try MarkerdProcess(arguments: ["--cluster", natsURLs, "--node-id", "r\(i)", "--data-dir", data,
                                               "--http", "127.0.0.1:\(httpPorts[i])"] + extra, port: rpcPorts[i])
        replicas[i] = p
        return try p.waitUntilReady()
    }

    /// kill -9 of replica `i`; waits until it is gone.
    func killReplica(_ i: Int) {
        guard let p = replicas[i] else { return }
        p.kill(SIGKILL)
        p.process.waitUntilExit()
        replicas[i] = nil
    }

    /// A client of replica `i` (whether or not it runs now).
    func client(_ i: Int, timeout: Duration = .seconds(10), readYourWrites: Bool = false) throws -> MarkerdClient {
        try MarkerdClient(url: "tcp://127.0.0.1:\(rpcPorts[i])", timeout: timeout, readYourWrites: readYourWrites)
    }

    /// `/readyz`'s status of replica `i` (through its HTTP gateway).
    func readyzStatus(_ i: Int) throws -> Int {
        try RawHTTP.request(port: httpPorts[i], "GET", "/readyz").status
    }

    /// Kills every process and removes the directory. Idempotent.
    func stop() {
        for i in replicas.indices { killReplica(i) }
        for i in nats.indices { killNats(i) }
        try? FileManager.default.removeItem(at: dir)
    }
}

/// What a replica holds of a layer: its version and every marker's id and position, sorted by id.
struct LayerState: Equatable, CustomStringConvertible {
    var version: UInt64
    var markers: [String]

    var description: String { "version \(version), \(markers.count) markers" }

    /// Reads layer `layerID` from `client` once it applied at least `sequence` (reads carry it as
    /// `min_sequence`; UNAVAILABLE while the replica catches up is retried until `timeout`).
    static func read(_ layerID: String, from client: MarkerdClient, atLeast sequence: UInt64,
                     timeout: Duration = .seconds(60)) throws -> LayerState {
        precondition(client.readYourWrites)
        client.observe(sequence: sequence)
        var state: LayerState?
        try waitUntil("a replica applied sequence \(sequence)", timeout: timeout) {
            do {
                let layer = try client.getLayer(layerID)
                var markers: [String] = []
                try client.forEachMarkerPage(layerID) { page in
                    markers += page.map { "\($0.id)@\($0.position?.latitude ?? .nan),\($0.position?.longitude ?? .nan)" }
                }
                state = LayerState(version: layer.version, markers: markers.sorted())
                return true
            } catch let e as ClientError where e.code == .unavailable {
                return false  // catching up, or not answering yet (a transport error)
            }
        }
        return state!
    }
}
