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
    /// Default threshold: 1 MiB. (glibc starts at 128 KiB, but then a 1000-marker query
    /// reply's buffers would be fresh mappings, page-faulted in on every call.)
    public static let defaultMmapThresholdBytes = 1 << 20

    /// Default trim threshold: 4 MiB of free memory kept at the top of a heap (glibc's default,
    /// 128 KiB, which a fixed mmap threshold leaves in place, gives a reply buffer of a few
    /// hundred KB back to the kernel when it is freed, so the next reply of that size faults its
    /// pages in again: most of the cost of copying a 300 KB GetClusters answer).
    public static let defaultTrimThresholdBytes = 4 << 20

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
