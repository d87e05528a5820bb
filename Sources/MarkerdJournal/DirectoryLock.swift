import Foundation
internal import Glibc

/// An exclusive `flock` on `<directory>/LOCK`, held for the lifetime of the object (released by
/// `release()` or deinit, and by the kernel when the process dies). flock locks belong to the open
/// file description, so a second lock attempt fails even from the same process.
public final class DirectoryLock: @unchecked Sendable {
    public let directory: String
    // Guarded by `mutex`.
    private var fd: Int32
    private let mutex = NSLock()

    /// Takes the lock without waiting; throws `JournalError.directoryLocked` naming the
    /// directory (and the holder's pid) if another process or object holds it.
    public init(directory: String) throws {
        self.directory = directory
        let path = FileIO.join(directory, "LOCK")
        let fd = try FileIO.open(path, O_RDWR | O_CREAT)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            if e == EINTR { continue }
            var holder: String?
            var buf = [UInt8](repeating: 0, count: 32)
            let n = buf.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, 32, 0) }
            if n > 0 {
                holder = String(decoding: buf[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                if holder?.isEmpty == true { holder = nil }
            }
            FileIO.close(fd)
            if e == EWOULDBLOCK { throw JournalError.directoryLocked(directory: directory, holder: holder) }
            throw JournalError.io(operation: "flock", path: path, errno: e)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { Glibc.pwrite(fd, $0.baseAddress, $0.count, 0) }
        self.fd = fd
    }

    /// Releases the lock (idempotent).
    public func release() {
        mutex.lock()
        defer { mutex.unlock() }
        if fd >= 0 {
            _ = flock(fd, LOCK_UN)
            FileIO.close(fd)
            fd = -1
        }
    }

    deinit { release() }
}
