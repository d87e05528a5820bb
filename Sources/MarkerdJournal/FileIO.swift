import Foundation
internal import Glibc

/// Thin, throwing wrappers over the POSIX calls the journal uses. All paths are absolute or
/// relative to the process's cwd; errors name the operation and path.
///
/// Files are created `0600` and the data directory `0700` (less whatever the umask removes):
/// markers, icons and idempotent replies are the users' data, readable by markerd's user only.
enum FileIO {
    /// Mode of every file the journal creates (segments, snapshots, temporaries, LOCK, manifest).
    static let fileMode: mode_t = 0o600
    /// Mode of the data directory when the journal creates it.
    static let directoryMode: mode_t = 0o700

    static func open(_ path: String, _ flags: Int32, mode: mode_t = fileMode) throws -> Int32 {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            throw JournalError.io(operation: "open", path: path, errno: errno)
        }
    }

    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Writes all of `bytes` (loops over short writes and EINTR).
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        guard var p = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let n = Glibc.write(fd, p, left)
            if n < 0 {
                if errno == EINTR { continue }
                throw JournalError.io(operation: "write", path: path, errno: errno)
            }
            left -= n
            p += n
        }
    }

    /// Reads up to `count` bytes at `offset`; returns fewer only at end of file.
    static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, count: Int, offset: Int64, path: String) throws -> Int {
        var done = 0
        while done < count {
            let n = Glibc.pread(fd, buffer + done, count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw JournalError.io(operation: "read", path: path, errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    static func fdatasync(_ fd: Int32, path: String) throws {
        while Glibc.fdatasync(fd) != 0 {
            if errno == EINTR { continue }
            throw JournalError.io(operation: "fdatasync", path: path, errno: errno)
        }
    }

    static func fsync(_ fd: Int32, path: String) throws {
        while Glibc.fsync(fd) != 0 {
            if errno == EINTR { continue }
            throw JournalError.io(operation: "fsync", path: path, errno: errno)
        }
    }

    /// fsync of the directory itself, making creates, renames and unlinks in it durable.
    static func fsyncDirectory(_ dir: String) throws {
        let fd = try open(dir, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try fsync(fd, path: dir)
    }

    static func size(_ fd: Int32, path: String) throws -> Int64 {
        var st = stat()
        if fstat(fd, &st) != 0 { throw JournalError.io(operation: "fstat", path: path, errno: errno) }
        return Int64(st.st_size)
    }

    static func size(path: String) throws -> Int64 {
        var st = stat()
        if stat(path, &st) != 0 { throw JournalError.io(operation: "stat", path: path, errno: errno) }
        return Int64(st.st_size)
    }

    /// Cuts the open file `fd` to `length` bytes (no fsync).
    static func truncate(_ fd: Int32, to length: Int64, path: String) throws {
        while ftruncate(fd, off_t(length)) != 0 {
            if errno == EINTR { continue }
            throw JournalError.io(operation: "ftruncate", path: path, errno: errno)
        }
    }

    static func truncate(_ path: String, to length: Int64) throws {
        let fd = try open(path, O_WRONLY)
        defer { close(fd) }
        if ftruncate(fd, off_t(length)) != 0 { throw JournalError.io(operation: "ftruncate", path: path, errno: errno) }
        try fsync(fd, path: path)
    }

    static func unlink(_ path: String) throws {
        if Glibc.unlink(path) != 0 && errno != ENOENT {
            throw JournalError.io(operation: "unlink", path: path, errno: errno)
        }
    }

    static func rename(_ from: String, _ to: String) throws {
        if Glibc.rename(from, to) != 0 { throw JournalError.io(operation: "rename to \(to)", path: from, errno: errno) }
    }

    static func makeDirectory(_ dir: String) throws {
        if mkdir(dir, directoryMode) != 0 && errno != EEXIST {
            throw JournalError.io(operation: "mkdir", path: dir, errno: errno)
        }
    }

    static func list(_ dir: String) throws -> [String] {
        guard let d = opendir(dir) else { throw JournalError.io(operation: "opendir", path: dir, errno: errno) }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafePointer(to: &e.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func join(_ dir: String, _ name: String) -> String {
        dir.hasSuffix("/") ? dir + name : dir + "/" + name
    }
}
