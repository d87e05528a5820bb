internal import Glibc

/// Every error the journal, recovery, snapshot, check and repair code throws or reports.
public enum JournalError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another process (or another `Journal`/repair in this process) holds the data directory's
    /// `LOCK` file. `holder` is what the holder wrote into it (its pid), if readable.
    case directoryLocked(directory: String, holder: String?)
    /// A system call failed. `errno` is the C errno value.
    case io(operation: String, path: String, errno: Int32)
    /// A journal segment or snapshot is damaged at `offset` (bytes from the start of `file`).
    /// Recovery stops; `markerd check` describes it, `markerd repair` cuts it off.
    case damaged(file: String, offset: Int64, reason: String)
    /// The data directory is inconsistent as a whole (e.g. a sequence gap between segments).
    case inconsistent(directory: String, reason: String)
    /// An earlier write or fsync failed; the journal accepts nothing more (restart to recover).
    case failed(cause: String)
    /// `close()` was called.
    case closed
    /// A record payload larger than `JournalFormat.maxPayloadSize`.
    case recordTooLarge(size: Int, limit: Int)
    /// A caller error (bad argument or call order).
    case invalidArgument(String)

    public var description: String {
        switch self {
        case let .directoryLocked(dir, holder):
            return "data directory \(dir) is in use by another markerd process"
                + (holder.map { " (LOCK held by pid \($0))" } ?? "") + "; refusing to open it twice"
        case let .io(op, path, e):
            return "\(op) \(path): \(String(cString: strerror(e))) (errno \(e))"
        case let .damaged(file, offset, reason):
            return "\(file): damaged at byte offset \(offset): \(reason)"
        case let .inconsistent(dir, reason):
            return "data directory \(dir): \(reason)"
        case let .failed(cause):
            return "journal failed earlier and accepts no more writes: \(cause)"
        case .closed:
            return "journal is closed"
        case let .recordTooLarge(size, limit):
            return "record of \(size) bytes exceeds the limit of \(limit) bytes"
        case let .invalidArgument(s):
            return s
        }
    }
}
