// What the node sweep (`TileRenderer+Sweep.swift`) asks the coverage mask besides the per-draw
// tests: whether a whole footprint placed at one position is settled.

extension CoverageMask {
    /// True when every pixel of a footprint is settled: rows `top ..< top + lo.count` (canvas
    /// rows), in row `top + j` the columns `x + lo[j] ..< x + hi[j]` (empty when `lo[j] >= hi[j]`;
    /// everything is clipped to the canvas, so a footprint off the canvas is settled). The same
    /// answer as `settled(row:_:_:)` for each row, top row first (in a sweep the top rows are the
    /// ones still open, so a failing test mostly stops at the first), with the mask's storage
    /// read through pointers taken once instead of once per row.
    func footprintSettled(top: Int, x: Int, lo: [Int], hi: [Int]) -> Bool {
        let j0 = max(0, -top), j1 = min(lo.count, height - top)
        if j0 >= j1 { return true }
        let width = width, wordsPerRow = wordsPerRow
        return bits.withUnsafeBufferPointer { w in
            freeInRow.withUnsafeBufferPointer { free in
                lo.withUnsafeBufferPointer { lo in
                    hi.withUnsafeBufferPointer { hi in
                        for j in j0..<j1 where free[top + j] != 0 {
                            let a = max(x + lo[j], 0), b = min(x + hi[j], width)
                            if a >= b { continue }
                            let base = (top + j) * wordsPerRow, ka = a >> 6, kb = (b - 1) >> 6
                            for k in ka...kb {
                                var m = UInt64.max
                                if k == ka { m &= UInt64.max << UInt64(a & 63) }
                                if k == kb { m &= UInt64.max >> UInt64(63 - ((b - 1) & 63)) }
                                if ~w[base + k] & m != 0 { return false }
                            }
                        }
                        return true
                    }
                }
            }
        }
    }
}
