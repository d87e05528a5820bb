extension Array {
    /// Makes room for `additional` more elements, growing the capacity 4x at a time (Array's
    /// own appends grow it 2x). For the big columns of a layer that bulk loads grow: each growth
    /// moves a column to a fresh mapping (glibc maps every block of 1 MiB and more on its own,
    /// see markerd's `MallocTuning`), whose pages the kernel clears as they are first written, and
    /// copies the old contents there. Growing 4x at a time, a column's pages are written (and
    /// cleared) 1.33 times its final size in all instead of 2 times, and a third as much is copied.
    /// Capacity never written is not resident (it costs address space only), but it counts in
    /// `approximateBytes`-style capacity sums. No-op when the room is there.
    @inline(__always) mutating func reserveGrowing(_ additional: Int) {
        let need = count + additional
        if need > capacity { reserveCapacity(Swift.max(need, 4 * capacity)) }
    }
}
