import Foundation
import MarkerdAPI
import Synchronization

/// The audit trail (`--audit-log PATH`; `-` is standard error): one JSON object per line for
/// every write and admin call, accepted or denied, and every call refused for its token:
///
///     {"time":"2026-12-06T12:00:00.123Z","token":"backend","method":"UpsertMarkers","layer":"fleet-1","status":"OK","request_id":7}
///
/// `token` is the token's name from the auth file (null when the call had no valid token),
/// `layer` the layer the request names (absent for methods without one), `status` the reply's
/// code. Never the token itself, never marker payloads. DragTo is written only when refused (a
/// drag's BeginDrag and EndDrag or CancelDrag are written; its many moves are not). The file is
/// opened for appending (mode 0600) and reopened on SIGHUP, for log rotation.
final class AuditLog: Sendable {
    let path: String
    /// The open file descriptor (guarded: swapped on reopen).
    private let fd: Mutex<Int32>

    /// Opens `path` for appending (created 0600); throws naming it.
    init(path: String) throws(AuditLogError) {
        self.path = path
        fd = Mutex(try Self.open(path))
    }

    struct AuditLogError: Error, CustomStringConvertible { var description: String }

    private static func open(_ path: String) throws(AuditLogError) -> Int32 {
        if path == "-" { return 2 }
        let fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AuditLogError(description: "cannot open audit log \(path): \(String(cString: strerror(errno)))") }
        return fd
    }

    /// Reopens the file (after rotation); on failure keeps writing to the old one and throws.
    func reopen() throws(AuditLogError) {
        let new = try Self.open(path)
        let old = fd.withLock { fd in
            defer { fd = new }
            return fd
        }
        if old != 2 { close(old) }
    }

    /// Appends one record (one write(2), so lines from many threads never interleave).
    func record(token: String?, method: Substring, layer: String?, code: V1.Code, requestID: UInt64) {
        var line = "{\"time\":\"\(Self.timestamp())\",\"token\":"
        line += token.map(Self.quoted) ?? "null"
        line += ",\"method\":\(Self.quoted(String(method)))"
        if let layer { line += ",\"layer\":\(Self.quoted(layer))" }
        line += ",\"status\":\"\(code.name)\",\"request_id\":\(requestID)}\n"
        fd.withLock { fd in
            var line = line
            _ = line.withUTF8 { write(fd, $0.baseAddress, $0.count) }
        }
    }

    /// `2026-12-06T12:00:00.123Z` (UTC, milliseconds).
    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = tm()
        var secs = ts.tv_sec
        gmtime_r(&secs, &t)
        func pad(_ v: Int32, _ n: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, n - s.count)) + s }
        return "\(t.tm_year + 1900)-\(pad(t.tm_mon + 1, 2))-\(pad(t.tm_mday, 2))T\(pad(t.tm_hour, 2)):\(pad(t.tm_min, 2)):\(pad(t.tm_sec, 2)).\(pad(Int32(ts.tv_nsec / 1_000_000), 3))Z"
    }

    /// A JSON string literal of `s`.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 || u.value == 0x7F {
                    let h = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
