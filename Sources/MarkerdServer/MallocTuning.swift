#if canImport(Glibc)
import Glibc
#endif

/// Process-wide allocator settings for markerd (glibc only; a no-op elsewhere).
///
/// glibc serves allocations below its mmap threshold from heap arenas, and raises that
/// threshold (up to 32 MiB) every time a larger mmapped block is freed. A layer's columns grow
/// by doubling and every bulk upsert decodes megabytes of transient request data, so with the
/// dynamic threshold the freed generations of a column and the freed request buffers stay in
/// the arenas and remain resident: at 1M markers that was 170 B/marker of RSS against ~90
/// B/marker the layer actually holds. A fixed threshold keeps every block of at least
/// `mmapThresholdBytes` in its own mapping, returned to the kernel as soon as it is freed
/// (cost: fresh pages are faulted in again, well under 1 % of a bulk load's CPU time).
public enum MallocTuning {
    /// Default threshold: 1 MiB + 64 KiB. (glibc starts at 128 KiB, but then a 1000-marker
    /// query reply's buffers would be fresh mappings, page-faulted in on every call.) The extra
    /// 64 KiB keeps a doubled array of exactly 1 MiB (plus its header) in the arenas: a dense
    /// tile's collected draws (16k-32k items of 32 bytes, 10M z10 city tiles) were a fresh
    /// mapping, faulted in page by page, on every tile. 4 MiB was measured too: at 10M markers
    /// markerd then held 80.4 B/marker (minus ids) after the load instead of 71.0-71.5.
    public static let defaultMmapThresholdBytes = (1 << 20) + (64 << 10)

    /// Default trim threshold: 64 MiB of free memory kept at the top of a heap. glibc's default,
    /// 128 KiB, which a fixed mmap threshold leaves in place, gives a reply buffer of a few
    /// hundred KB back to the kernel when it is freed, so the next reply of that size faults its
    /// pages in again (most of the cost of copying a 300 KB GetClusters answer). 4 MiB (until
    /// 2026-12-01) still gave back a dense tile's buffers (its draws, the bands' canvases and
    /// masks, the PNG's rows and symbols: several MB a tile): the thread that rendered a 10M z10
    /// city tile took 287 / 763 minor page faults (p50 / p99) per tile, at 0.3-0.6 GB/s for fresh
    /// memory on this VM. With 64 MiB (and the threshold above) 0 / 90, and GetTile z10 p99 went
    /// from 8.50-8.92 to 7.31-8.13 ms (marker-bench, alternating builds); resident bytes after the
    /// 10M load 71.3 B/marker (minus ids) against 71.0.
    public static let defaultTrimThresholdBytes = 64 << 20

    /// Fixes glibc's mmap threshold (which also stops the dynamic adjustment of the trim
    /// threshold) and trim threshold. Returns false when the allocator refused or is not glibc's.
    @discardableResult
    public static func apply(mmapThresholdBytes: Int = defaultMmapThresholdBytes,
                             trimThresholdBytes: Int = defaultTrimThresholdBytes) -> Bool {
        #if canImport(Glibc)
        // <malloc.h> is not part of the Glibc module: look mallopt up (absent under other allocators).
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return false }
        typealias MalloptFunction = @convention(c) (Int32, Int32) -> Int32
        let mallopt = unsafeBitCast(symbol, to: MalloptFunction.self)
        let mMmapThreshold: Int32 = -3   // M_MMAP_THRESHOLD in <malloc.h>
        let mTrimThreshold: Int32 = -1   // M_TRIM_THRESHOLD in <malloc.h>
        return mallopt(mMmapThreshold, Int32(clamping: mmapThresholdBytes)) == 1
            && mallopt(mTrimThreshold, Int32(clamping: trimThresholdBytes)) == 1
        #else
        return false
        #endif
    }

    /// The glibc tunable that makes malloc advise transparent huge pages (MADV_HUGEPAGE) for the
    /// memory it maps (glibc 2.35 and later; older versions ignore it).
    static let hugePageTunable = "glibc.malloc.hugetlb=1"

    /// Restarts this process (`execv` of the binary /proc/self/exe links to, with the same
    /// arguments: the same pid, and the same process name for `ps`, `pgrep` and systemd, which an
    /// exec of the link itself would rename "exe") with `hugePageTunable` added to
    /// GLIBC_TUNABLES, when the kernel gives transparent huge pages only on request ("[madvise]" in /sys/kernel/mm/transparent_hugepage/enabled) and the
    /// variable does not set that tunable yet. Call it first thing, before any thread starts:
    /// glibc reads its tunables at startup only. Returns (doing nothing) when no restart is
    /// needed or possible: THP "always" or "never", the tunable already set (also after the
    /// restart, so it happens at most once), not Linux, or the binary's path or `execv` failed.
    ///
    /// Why: a 10M-marker layer's columns and grid are gigabytes that grow while a bulk load
    /// faults them in page by page, and that queries read at random (a page of 1,000 markers is
    /// 1,000 scattered rows), each read also missing the TLB with 4 KiB pages (a two-level walk
    /// under virtualisation). Measured in process at 10M markers (marker-bench `--only viewport`,
    /// runs alternating with and without on a loaded shared machine): loading took 15-25 % less
    /// CPU per marker; QueryViewport's server work did not differ beyond the noise (about 5 %
    /// less at 1M). Resident memory grows by at most part of a huge page per mapping (10M
    /// markers: within 2.5 B/marker of the runs without).
    public static func enableHugePages() {
        #if os(Linux)
        let current = getenv("GLIBC_TUNABLES").map { String(cString: $0) } ?? ""
        guard !current.contains("glibc.malloc.hugetlb"), transparentHugePageMode() == "madvise" else { return }
        guard let binary = realpath("/proc/self/exe", nil) else { return }
        defer { free(binary) }
        setenv("GLIBC_TUNABLES", current.isEmpty ? hugePageTunable : current + ":" + hugePageTunable, 1)
        execv(binary, CommandLine.unsafeArgv)
        // Still here: execv failed; carry on with small pages, and do not pass the variable on.
        if current.isEmpty { unsetenv("GLIBC_TUNABLES") } else { setenv("GLIBC_TUNABLES", current, 1) }
        #endif
    }

    /// The kernel's transparent huge page mode ("always", "madvise" or "never"), or nil.
    public static func transparentHugePageMode() -> String? {
        #if os(Linux)
        guard let f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r") else { return nil }
        defer { fclose(f) }
        var buffer = [CChar](repeating: 0, count: 128)
        guard fgets(&buffer, Int32(buffer.count), f) != nil else { return nil }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let open = text.firstIndex(of: "["), let close = text[open...].firstIndex(of: "]") else { return nil }
        return String(text[text.index(after: open)..<close])
        #else
        return nil
        #endif
    }
}
