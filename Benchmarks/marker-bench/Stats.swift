import Foundation

/// Percentiles and timing helpers. Every latency in marker-bench is kept in microseconds.
enum Stats {
    /// The `p`-th percentile (0...1) of `sorted` by the nearest-rank method: the smallest sample
    /// such that at least `p` of the samples are <= it. `sorted` must be ascending and non-empty.
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        precondition(!sorted.isEmpty, "percentile of no samples")
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }

    /// The median of unsorted integers (e.g. message sizes in bytes); 0 when empty.
    static func median(_ values: [Int]) -> Int {
        guard !values.isEmpty else { return 0 }
        return values.sorted()[(values.count - 1) / 2]
    }

    /// Mean of `values`; 0 when empty.
    static func mean(_ values: [Double]) -> Double {
        values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count)
    }
}

/// p50 / p99 / mean of a set of latency samples, in microseconds.
struct LatencySummary: Sendable {
    var samples: Int
    var p50: Double
    var p99: Double
    var mean: Double
    var max: Double
    /// Samples of at least `stallMicros`: on this machine's loopback a round trip takes well under
    /// half a millisecond, so these are mostly the host's stalls. When they reach 1 % of the
    /// samples, the p99 is one of them.
    var stalls: Int
    /// Every sample, ascending, in microseconds (what `--report` plots as a distribution).
    var sortedMicros: [Double]

    /// The threshold of `stalls`: 1 ms.
    static let stallMicros = 1000.0

    /// Summarises latencies in microseconds (any order). `samplesMicros` must be non-empty.
    init(samplesMicros: [Double]) {
        let sorted = samplesMicros.sorted()
        sortedMicros = sorted
        samples = sorted.count
        p50 = Stats.percentile(sorted, 0.50)
        p99 = Stats.percentile(sorted, 0.99)
        mean = Stats.mean(sorted)
        max = sorted.last ?? 0
        stalls = sorted.count - (sorted.firstIndex(where: { $0 >= LatencySummary.stallMicros }) ?? sorted.count)
    }
}

extension Duration {
    /// This duration in microseconds.
    var micros: Double { Double(components.seconds) * 1e6 + Double(components.attoseconds) / 1e12 }
    /// This duration in nanoseconds.
    var nanos: Double { Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9 }
    /// This duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// Times `body` on the continuous clock; returns its result and the elapsed time.
@inline(__always)
func timed<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> (T, Duration) {
    let start = ContinuousClock.now
    let value = try body()
    return (value, ContinuousClock.now - start)
}

/// Progress lines on standard error (the table goes to standard output), prefixed with the
/// seconds since marker-bench started.
enum Progress {
    static let start = ContinuousClock.now
    private static let lock = NSLock()

    static func log(_ message: String) {
        let t = (ContinuousClock.now - start).seconds
        let line = String(format: "[%7.1fs] ", t) + message + "\n"
        lock.lock()
        FileHandle.standardError.write(line.data(using: .utf8)!)
        lock.unlock()
    }
}

/// Machine facts for the table header, read from /proc.
enum Machine {
    /// Online processors.
    static var processors: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// Total physical memory in bytes.
    static var memoryBytes: UInt64 { ProcessInfo.processInfo.physicalMemory }

    /// Currently available memory in bytes (MemAvailable from /proc/meminfo), or nil.
    static var availableBytes: UInt64? {
        procField(path: "/proc/meminfo", key: "MemAvailable:").map { $0 * 1024 }
    }

    /// The CPU model name, or "unknown".
    static var cpuModel: String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown"
    }

    /// The kernel release (uname -r).
    static var kernel: String {
        (try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
    }

    /// Resident set size of process `pid` in bytes (VmRSS from /proc/PID/status), or nil.
    static func residentBytes(pid: Int32) -> UInt64? {
        procField(path: "/proc/\(pid)/status", key: "VmRSS:").map { $0 * 1024 }
    }

    /// Anonymous memory of process `pid` backed by transparent huge pages, in bytes
    /// (AnonHugePages from /proc/PID/smaps_rollup), or nil.
    static func anonHugePagesBytes(pid: Int32) -> UInt64? {
        procField(path: "/proc/\(pid)/smaps_rollup", key: "AnonHugePages:").map { $0 * 1024 }
    }

    /// How this process's heap is paged, for the table header: whether GLIBC_TUNABLES asks
    /// malloc for transparent huge pages, and the kernel's THP mode.
    static var heapPages: String {
        let tunables = ProcessInfo.processInfo.environment["GLIBC_TUNABLES"] ?? ""
        let mode = transparentHugePageMode ?? "unknown"
        if tunables.contains("glibc.malloc.hugetlb=1") { return "transparent huge pages (GLIBC_TUNABLES=\(tunables), THP mode \(mode)), as markerd's" }
        if mode == "always" { return "transparent huge pages (THP mode always)" }
        return "4 KiB pages (THP mode \(mode)" + (tunables.isEmpty ? "" : ", GLIBC_TUNABLES=\(tunables)")
            + "; markerd's are huge: set GLIBC_TUNABLES=glibc.malloc.hugetlb=1 as make bench does)"
    }

    /// The kernel's transparent huge page mode ("always", "madvise" or "never"), or nil.
    static var transparentHugePageMode: String? {
        guard let text = try? String(contentsOfFile: "/sys/kernel/mm/transparent_hugepage/enabled", encoding: .utf8),
              let open = text.firstIndex(of: "["), let close = text[open...].firstIndex(of: "]") else { return nil }
        return String(text[text.index(after: open)..<close])
    }

    /// The environment markerd children run with: this process's, with transparent huge pages for
    /// the heap (`glibc.malloc.hugetlb=1` added to GLIBC_TUNABLES, as deploy/markerd.service and
    /// `make run` start markerd) unless GLIBC_TUNABLES already sets `glibc.malloc.hugetlb`.
    static var markerdEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        let tunables = environment["GLIBC_TUNABLES"] ?? ""
        if !tunables.contains("glibc.malloc.hugetlb") {
            environment["GLIBC_TUNABLES"] = tunables.isEmpty ? "glibc.malloc.hugetlb=1" : tunables + ":glibc.malloc.hugetlb=1"
        }
        return environment
    }

    /// CPU time (user + system) process `pid` has used so far, in seconds, or nil.
    static func cpuSeconds(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm)": state is field 3; utime and stime are fields 14 and 15 (clock ticks).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU time the calling thread has used, in seconds (CLOCK_THREAD_CPUTIME_ID).
    static var threadCPUSeconds: Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// CPU time every thread of this process has used, in seconds (CLOCK_PROCESS_CPUTIME_ID).
    static var processCPUSeconds: Double {
        var t = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// How fast the kernel hands this process fresh memory: a new anonymous mapping of
    /// `bytes` (transparent huge pages advised, as markerd's heap), one byte written per 4 KiB,
    /// in GB/s (faulting in and zeroing included), or nil if the mapping failed. Bulk loads
    /// and big renders grow the heap by hundreds of MB, and on this VM (a Firecracker guest)
    /// fresh memory was seen to fault in at 0.2-0.8 GB/s when the guest had not used it
    /// recently and 2.3-5.8 GB/s when it had just been freed, so this figure, read at the start
    /// and the end of a run, tells which state the host was in.
    static func freshMemoryRate(bytes: Int = 256 << 20) -> Double? {
        guard let p = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), p != MAP_FAILED else { return nil }
        defer { munmap(p, bytes) }
        _ = madvise(p, bytes, 14)  // MADV_HUGEPAGE
        let bytesPointer = p.assumingMemoryBound(to: UInt8.self)
        let start = DispatchTime.now().uptimeNanoseconds
        for offset in stride(from: 0, to: bytes, by: 4096) { bytesPointer[offset] = 1 }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Double(bytes) / seconds / 1e9
    }

    /// The 1-minute load average (runnable threads), or nil.
    static var loadAverage: Double? {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.flatMap { Double($0) }
    }

    /// The first number after `key` in a /proc file of "Key:   123 kB" lines.
    private static func procField(path: String, key: String) -> UInt64? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key) {
            return line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { UInt64($0) }
        }
        return nil
    }
}
