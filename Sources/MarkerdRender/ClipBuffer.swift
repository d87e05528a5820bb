/// Where the cull writes its draws' clips (`CoverageMask.uncovered`: `r0, r1`, then each row's
/// masks, per kept draw): a growable run of `UInt64` written through a pointer, so that keeping a draw
/// costs its stores and no array append (the append had cost about 90 instructions per kept
/// draw). `array` copies the contents out when the cull is done.
///
/// The memory belongs to a class instance the buffer holds; `base`, `count` and `capacity` live
/// in the struct, so that writing a clip touches no reference-counted storage. Copies share
/// that memory (no copy on write): keep one buffer per cull and pass it `inout`.
struct ClipBuffer {
    private final class Storage {
        let base: UnsafeMutablePointer<UInt64>
        init(capacity: Int) { base = .allocate(capacity: capacity) }
        deinit { base.deallocate() }
    }

    private var storage: Storage
    /// The first value; valid until the next `reserve` that grows the buffer.
    private(set) var base: UnsafeMutablePointer<UInt64>
    /// Values written and committed.
    private(set) var count = 0
    private var capacity: Int

    /// An empty buffer with room for `capacity` values (at least 64) before it grows.
    init(capacity: Int) {
        self.capacity = Swift.max(64, capacity)
        storage = Storage(capacity: self.capacity)
        base = storage.base
    }

    /// Room for `n` more values: where they go (`base + count`). Nothing counts until `commit`.
    @inline(__always) mutating func reserve(_ n: Int) -> UnsafeMutablePointer<UInt64> {
        if count &+ n > capacity { grow(count &+ n) }
        return base + count
    }

    /// Counts the next `n` values (written after `reserve` of at least `n`).
    @inline(__always) mutating func commit(_ n: Int) { count &+= n }

    /// The value at `i` (below `count`).
    @inline(__always) subscript(i: Int) -> UInt64 { base[i] }

    private mutating func grow(_ needed: Int) {
        capacity = Swift.max(needed, 2 * capacity)
        let bigger = Storage(capacity: capacity)
        bigger.base.initialize(from: base, count: count)
        storage = bigger
        base = bigger.base
    }

    /// The committed values.
    var array: [UInt64] { Array(UnsafeBufferPointer(start: base, count: count)) }
}
