#if canImport(Glibc)
import Glibc
#endif

/// Process-wide allocator settings for markerd that `mallopt` sets at startup (glibc only; a
/// no-op elsewhere). Settings glibc reads only before `main` (transparent huge pages for the
/// heap: `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`) are the caller's: deploy/markerd.service and
/// `make run` set them.
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
}
