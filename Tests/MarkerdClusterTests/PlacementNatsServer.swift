import Foundation
import MarkerdTestSupport
import Testing

/// A real `nats-server -js` (Debian's package) on a free loopback port with a temporary store,
/// for the placement and redirect tests; ``stop()`` (or deinit) kills it and removes the store.
final class PlacementNatsServer {
    let process = Process()
    let url: String
    let storeDirectory: String

    /// Starts the server and waits until it accepts connections.
    /// - Throws: a clear message when `nats-server` is not installed (`scripts/install-deps.sh --test`).
    init() throws {
        guard let binary = natsServerBinary() else { throw Failure(description: natsServerMissing) }
        let port = MarkerdProcess.freePort()
        url = "nats://127.0.0.1:\(port)"
        storeDirectory = NSTemporaryDirectory() + "markerd-nats-\(UInt64.random(in: 0...UInt64.max))"
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDirectory]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntil("nats-server accepts connections on port \(port)") {
            guard process.isRunning else { throw Failure(description: "nats-server exited with \(process.terminationStatus)") }
            return (try? RawConnection(port: port, timeoutSeconds: 1)) != nil
        }
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: storeDirectory)
    }

    deinit { stop() }

    struct Failure: Error, CustomStringConvertible { var description: String }
}
