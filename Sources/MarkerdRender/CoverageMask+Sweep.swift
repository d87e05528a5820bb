// What the node sweep (`TileRenderer+Sweep.swift`) asks the coverage mask besides the per-draw
// tests: whether a whole footprint placed at one position is settled.

extension CoverageMask {
    /// True when every pixel of a footprint is settled: rows `top ..< top + lo.count` (canvas
    /// rows), in row `top + j` the columns `x + lo[j] ..< x + hi[j]` (empty when `lo[j] >= hi[j]`;
    /// everything is clipped to the canvas, so a footprint off the canvas is settled). The same
    /// answer as `settled(row:_:_:)` for each row, top row first (in a sweep the top rows are the
    /// ones still open, so a failing test mostly stops at the first).
    func footprintSettled(top: Int, x: Int, lo: [Int], hi: [Int]) -> Bool {
        let j0 = max(0, -top), j1 = min(lo.count, height - top)
        if j0 >= j1 { return true }
        return lo.withUnsafeBufferPointer { lo in
            hi.withUnsafeBufferPointer { hi in
                for j in j0..<j1 where !settled(row: top + j, x + lo[j], x + hi[j]) { return false }
                return true
            }
        }
    }
}
