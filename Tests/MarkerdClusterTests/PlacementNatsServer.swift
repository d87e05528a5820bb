import Foundation
import MarkerdTestSupport
import Testing

/// A real `nats-server -js` (Debian's package) on a free loopback port with a temporary store,
/// for the placement and redirect tests; ``stop()`` (or deinit) kills it and removes the store.
final class PlacementNatsServer {
    let process = Process()
    let url: String
    let storeDirectory: String

    /// Where `nats-server` is: $NATS_SERVER_BIN, else the first on PATH or in /usr/sbin, /usr/bin.
    static var binary: String? {
        if let path = ProcessInfo.processInfo.environment["NATS_SERVER_BIN"] { return path }
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin"]
        return dirs.map { $0 + "/nats-server" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts the server and waits until it accepts connections.
    /// - Throws: a clear message when `nats-server` is not installed (`scripts/install-deps.sh --test`).
    init() throws {
        guard let binary = Self.binary else {
            throw Failure(description: "nats-server not found: the cluster tests need it "
                          + "(apt-get install nats-server, or scripts/install-deps.sh --test)")
        }
        let port = Self.freePort()
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

    static func freePort() -> Int {
        // Bind port 0, read the port, close: good enough on loopback for a test.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
