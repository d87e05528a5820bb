import Foundation

/// One-line logs on standard error: `2026-11-29T18:04:33.123Z level message key=value ...`.
/// Operators read these through journald (deploy/markerd.service).
public enum Log {
    public enum Level: String, Sendable { case debug, info, warning, error }

    nonisolated(unsafe) private static let formatter: ISO8601DateFormatter = {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }()
    private static let lock = NSLock()

    public static func info(_ message: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.info, message, fields) }
    public static func warning(_ message: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.warning, message, fields) }
    public static func error(_ message: String, _ fields: KeyValuePairs<String, Any> = [:]) { write(.error, message, fields) }

    public static func write(_ level: Level, _ message: String, _ fields: KeyValuePairs<String, Any>) {
        lock.lock()
        defer { lock.unlock() }
        var line = "\(formatter.string(from: Date())) \(level.rawValue) \(message)"
        for (k, v) in fields { line += " \(k)=\(v)" }
        line += "\n"
        FileHandle.standardError.write(line.data(using: .utf8)!)
    }
}
