/// Reads made only to bring memory into the cache ahead of use: a loop of loads that do not
/// depend on each other lets the processor keep some ten cache misses in flight, so the work
/// that follows finds its data in the cache instead of waiting for one miss after another.
/// Such a loop's result is of no use, so the optimiser would drop the loads: `keep` takes it.
public enum CacheTouch {
    /// Takes a value that must be computed (a sum of the words a touch loop read). An opaque,
    /// unoptimised call: one per batch of touched data, not per load.
    @inline(never) @_optimize(none) public static func keep(_ value: UInt32) {}
}
