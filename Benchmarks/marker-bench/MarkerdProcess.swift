import Foundation
import MarkerdClient

/// A child process that announces its URL on a log line (markerd, or marker-bench's own echo
/// server), started with `Process` and stopped with SIGTERM.
///
/// The child listens on `tcp://127.0.0.1:0` (a free port); the bound URL is read from its
/// standard error (`... urls=tcp://127.0.0.1:PORT ...` for markerd) or standard output
/// (`listening tcp://...` for the echo server).
final class ChildProcess: @unchecked Sendable {
    /// Every child still running, so an interrupted marker-bench can stop them.
    nonisolated(unsafe) private static var running: [Int32: Process] = [:]  // guarded by registryLock
    private static let registryLock = NSLock()

    let name: String
    let process = Process()
    private let condition = NSCondition()
    private var url: String?           // guarded by condition
    private var lines: [String] = []   // guarded by condition: the last 200 log lines
    private var partial = ""           // guarded by condition
    private let echo: Bool
    /// When `start` launched the process.
    private(set) var launchedAt = ContinuousClock.now

    /// - Parameters:
    ///   - echo: copy the child's log lines to our standard error (prefixed with `name`).
    init(name: String, executable: String, arguments: [String], echo: Bool) {
        self.name = name
        self.echo = echo
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
    }

    var pid: Int32 { process.processIdentifier }

    /// Launches the child and waits until it prints the URL it listens on (at most `timeout`).
    /// Returns that URL. Throws if the child cannot start, exits, or stays silent.
    @discardableResult
    func start(timeout: Duration = .seconds(600)) throws -> String {
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        for pipe in [out, err] {
            pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                if data.isEmpty { handle.readabilityHandler = nil; return }
                self?.consume(String(decoding: data, as: UTF8.self))
            }
        }
        launchedAt = .now
        try process.run()
        Self.registryLock.withLock { Self.running[process.processIdentifier] = process }
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        while url == nil {
            if !process.isRunning {
                throw BenchError("\(name) exited with status \(process.terminationStatus) before listening; last lines:\n"
                                 + lines.suffix(10).joined(separator: "\n"))
            }
            if !condition.wait(until: min(deadline, Date().addingTimeInterval(0.2))) && Date() >= deadline {
                throw BenchError("\(name) did not announce a URL within \(timeout)")
            }
        }
        return url!
    }

    private func consume(_ text: String) {
        condition.lock()
        partial += text
        var complete: [String] = []
        while let nl = partial.firstIndex(of: "\n") {
            complete.append(String(partial[..<nl]))
            partial = String(partial[partial.index(after: nl)...])
        }
        for line in complete {
            lines.append(line)
            if lines.count > 200 { lines.removeFirst(lines.count - 200) }
            if url == nil, let found = Self.parseURL(line) { url = found; condition.broadcast() }
        }
        condition.unlock()
        if echo { for line in complete { Progress.log("[\(name)] \(line)") } }
    }

    /// The URL in "markerd listening ... urls=URL[,URL]" or "listening URL".
    static func parseURL(_ line: String) -> String? {
        if let r = line.range(of: "urls=") {
            return line[r.upperBound...].split(separator: " ").first?.split(separator: ",").first.map(String.init)
        }
        if line.hasPrefix("listening ") { return String(line.dropFirst("listening ".count)) }
        return nil
    }

    /// The last log lines that contain `text`.
    func logLines(containing text: String) -> [String] {
        condition.withLock { lines.filter { $0.contains(text) } }
    }

    /// Resident set size in bytes (VmRSS), or nil once the process has gone.
    var residentBytes: UInt64? { Machine.residentBytes(pid: pid) }

    /// Sends SIGTERM and waits for the exit (SIGKILL after `timeout`). Returns the exit status.
    @discardableResult
    func stop(timeout: Duration = .seconds(60), expectSIGTERM: Bool = false) -> Int32 {
        if process.isRunning { process.terminate() }
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning {
            let last = condition.withLock { lines.suffix(5) }.joined(separator: "\n    ")
            Progress.log("\(name) (pid \(pid)) did not exit within \(timeout) of SIGTERM: SIGKILL. Its last lines:\n    \(last)")
            kill(pid, SIGKILL)
            process.waitUntilExit()
        } else if !(expectSIGTERM && process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGTERM),
                  process.terminationReason != .exit || process.terminationStatus != 0 {
            Progress.log("\(name) (pid \(pid)) ended with \(process.terminationReason == .exit ? "status" : "signal") \(process.terminationStatus)")
        }
        Self.registryLock.withLock { _ = Self.running.removeValue(forKey: process.processIdentifier) }
        return process.terminationStatus
    }

    /// Adds `process`, started elsewhere (a script run with a time limit), to the children
    /// `killAll` stops, until `forget`.
    static func track(_ process: Process) {
        registryLock.withLock { running[process.processIdentifier] = process }
    }

    /// Removes `process` (given to `track`) once it has ended.
    static func forget(_ process: Process) {
        registryLock.withLock { _ = running.removeValue(forKey: process.processIdentifier) }
    }

    /// Stops every child still running (on SIGINT/SIGTERM of marker-bench).
    static func killAll() {
        let all = registryLock.withLock { running }
        for (pid, _) in all { kill(pid, SIGTERM) }
    }
}

/// A `markerd` child process and a client connected to it.
final class MarkerdProcess: @unchecked Sendable {
    let child: ChildProcess
    let client: MarkerdClient
    let url: String
    /// From launch until the first GetServerInfo reply (recovery included), in seconds.
    let secondsUntilAnswering: Double
    /// CPU time markerd used until then (user + system), in seconds.
    let cpuSecondsUntilAnswering: Double
    /// The reply to that first GetServerInfo.
    let info: V1ServerInfo

    struct V1ServerInfo {
        var markers: UInt64
        var durable: Bool
    }

    /// Starts `markerd --listen tcp://127.0.0.1:0 <arguments>` and waits until it answers.
    init(path: String, arguments: [String], name: String = "markerd", echo: Bool) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchError("no markerd at \(path): build it (swift build -c release) or pass --markerd PATH")
        }
        child = ChildProcess(name: name, executable: path,
                             arguments: ["--listen", "tcp://127.0.0.1:0"] + arguments, echo: echo)
        child.process.environment = Machine.markerdEnvironment
        url = try child.start()
        client = try MarkerdClient(url: url, timeout: .seconds(600))
        let info = try client.serverInfo()
        secondsUntilAnswering = (ContinuousClock.now - child.launchedAt).seconds
        cpuSecondsUntilAnswering = Machine.cpuSeconds(pid: child.pid) ?? 0
        self.info = V1ServerInfo(markers: info.markerCount, durable: info.durable)
    }

    var pid: Int32 { child.pid }
    var residentBytes: UInt64 { child.residentBytes ?? 0 }

    /// SIGTERM, wait for the graceful exit. Returns the exit status (0 expected).
    @discardableResult
    func stop() -> Int32 { child.stop() }
}

/// An error with a message for the operator.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
