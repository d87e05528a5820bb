import Foundation
import MarkerdClient

/// A real `markerd` process (the binary built next to the tests), for end-to-end and crash tests.
public final class MarkerdProcess {
    public let process = Process()
    public let url: String
    public let stderrPipe = Pipe()

    /// The markerd binary: $MARKERD_BIN, else `built("markerd")`.
    public static var binary: String { ProcessInfo.processInfo.environment["MARKERD_BIN"] ?? built("markerd") }

    /// The executable `name` built beside the running test bundle (so an optimised test build
    /// runs an optimised one); else in .build/debug or .build/release of this checkout.
    public static func built(_ name: String) -> String {
        if let dir = Bundle.main.executableURL?.deletingLastPathComponent() {
            let path = dir.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        for config in ["debug", "release"] {
            let path = root.appendingPathComponent(".build/\(config)/\(name)").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return root.appendingPathComponent(".build/debug/\(name)").path
    }

    public static func freePort() -> Int {
        // Bind port 0, read the port, close: good enough on loopback for a test.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Starts markerd listening on `port` with `arguments`, in `environment` (nil: this process's).
    public init(arguments: [String], port: Int = MarkerdProcess.freePort(), environment: [String: String]? = nil) throws {
        url = "tcp://127.0.0.1:\(port)"
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["--listen", url] + arguments
        process.environment = environment
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    /// Waits until the server answers ListLayers (it may be replaying its journal); the client
    /// returned sends `authToken`.
    public func waitUntilReady(timeout: Duration = .seconds(60), authToken: String = "") throws -> MarkerdClient {
        let deadline = ContinuousClock.now + timeout
        let client = try MarkerdClient(url: url, timeout: .seconds(2), authToken: authToken)
        while true {
            do {
                _ = try client.listLayers()
                return try MarkerdClient(url: url, timeout: .seconds(30), authToken: authToken)
            } catch {
                if !process.isRunning {
                    throw ProcessError(message: "markerd exited with \(process.terminationStatus): \(stderrText())")
                }
                if ContinuousClock.now > deadline { throw ProcessError(message: "markerd did not answer in time") }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    public func kill(_ signal: Int32) {
        Glibc.kill(process.processIdentifier, signal)
    }

    /// Waits for exit; returns the exit status, or nil on timeout.
    public func waitForExit(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// Reads standard error while markerd runs until a line containing `text` has arrived;
    /// returns everything read. Throws after `timeout` (or when standard error closes without
    /// it). What it read is no longer in ``stderrText()``.
    public func waitForLog(_ text: String, timeout: Duration = .seconds(30)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        let fd = stderrPipe.fileHandleForReading.fileDescriptor
        var seen = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: seen, as: UTF8.self).contains(text) {
            let left = deadline - .now
            guard left > .zero else { throw ProcessError(message: "no \"\(text)\" in markerd's log: \(String(decoding: seen, as: UTF8.self))") }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left.components.seconds * 1000 + 1)) > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw ProcessError(message: "markerd's log ended without \"\(text)\"") }
            seen += chunk[..<n]
        }
        return String(decoding: seen, as: UTF8.self)
    }

    public func stderrText() -> String {
        if process.isRunning { return "(still running)" }
        return String(decoding: stderrPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    public struct ProcessError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
        public init(message: String) { self.message = message }
    }
}
