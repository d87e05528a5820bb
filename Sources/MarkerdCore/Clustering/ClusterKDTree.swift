// A static 2-D KD-tree over flat arrays, behaving like kdbush 4 (ISC) with Float32 coordinates:
// the same kd-sort (Floyd-Rivest selection), the same `range` / `within` traversal and therefore
// the same result ORDER, which SuperclusterIndex's output depends on. Written from the documented
// algorithm; no code copied.

/// Static KD-tree: `ids[i]` is the input index of the item stored at sorted position `i`,
/// `coords[2i]`, `coords[2i+1]` its coordinates rounded to Float (kdbush's Float32Array).
struct ClusterKDTree: Sendable {
    let nodeSize: Int
    private(set) var ids: [Int32]
    private(set) var coords: [Float]

    var count: Int { ids.count }

    /// Traversal stack size in Ints: each step pops one frame and pushes at most two, so frames never
    /// exceed the tree depth + 1 (< 64 for any count); 3 Ints per frame.
    private static let stackCapacity = 3 * 66

    /// Indexes the points `(data[i*stride], data[i*stride+1])` for every whole stride in `data`.
    init(data: [Double], stride: Int, nodeSize: Int) {
        let n = data.count / stride
        let nodeSize = min(max(nodeSize, 2), 65535)
        self.nodeSize = nodeSize
        var ids = [Int32](repeating: 0, count: n)
        var coords = [Float](repeating: 0, count: 2 * n)
        data.withUnsafeBufferPointer { d in
            for i in 0..<n {
                ids[i] = Int32(i)
                coords[2 * i] = Float(d[i * stride])
                coords[2 * i + 1] = Float(d[i * stride + 1])
            }
        }
        if n > 0 {
            ids.withUnsafeMutableBufferPointer { idp in
                coords.withUnsafeMutableBufferPointer { cp in
                    Self.sort(idp, cp, nodeSize, 0, n - 1, 0)
                }
            }
        }
        self.ids = ids
        self.coords = coords
    }

    /// Indices of items with minX <= x <= maxX and minY <= y <= maxY, in kdbush order.
    func range(_ minX: Double, _ minY: Double, _ maxX: Double, _ maxY: Double) -> [Int] {
        var result: [Int] = []
        ids.withUnsafeBufferPointer { ids in
            coords.withUnsafeBufferPointer { coords in
              withUnsafeTemporaryAllocation(of: Int.self, capacity: Self.stackCapacity) { stack in
                var sp = 0
                @inline(__always) func push(_ l: Int, _ r: Int, _ a: Int) {
                    stack[sp] = l; stack[sp + 1] = r; stack[sp + 2] = a; sp += 3
                }
                push(0, ids.count - 1, 0)
                while sp > 0 {
                    sp -= 3
                    let left = stack[sp], right = stack[sp + 1], axis = stack[sp + 2]
                    if right - left <= nodeSize {
                        if left <= right {
                            for i in left...right {
                                let x = Double(coords[2 * i]), y = Double(coords[2 * i + 1])
                                if x >= minX && x <= maxX && y >= minY && y <= maxY { result.append(Int(ids[i])) }
                            }
                        }
                        continue
                    }
                    let m = (left + right) >> 1
                    let x = Double(coords[2 * m]), y = Double(coords[2 * m + 1])
                    if x >= minX && x <= maxX && y >= minY && y <= maxY { result.append(Int(ids[m])) }
                    if axis == 0 ? minX <= x : minY <= y {
                        push(left, m - 1, 1 - axis)
                    }
                    if axis == 0 ? maxX >= x : maxY >= y {
                        push(m + 1, right, 1 - axis)
                    }
                }
              }
            }
        }
        return result
    }

    /// Indices of items within distance `r` of (qx, qy) (inclusive), in kdbush order.
    func within(_ qx: Double, _ qy: Double, _ r: Double) -> [Int] {
        var result: [Int] = []
        within(qx, qy, r) { result.append($0) }
        return result
    }

    /// Calls `body` with each item within distance `r` of (qx, qy), in kdbush order.
    @inline(__always)
    func within(_ qx: Double, _ qy: Double, _ r: Double, _ body: (Int) -> Void) {
        let r2 = r * r
        ids.withUnsafeBufferPointer { ids in
            coords.withUnsafeBufferPointer { coords in
              withUnsafeTemporaryAllocation(of: Int.self, capacity: Self.stackCapacity) { stack in
                var sp = 0
                @inline(__always) func push(_ l: Int, _ r: Int, _ a: Int) {
                    stack[sp] = l; stack[sp + 1] = r; stack[sp + 2] = a; sp += 3
                }
                push(0, ids.count - 1, 0)
                while sp > 0 {
                    sp -= 3
                    let left = stack[sp], right = stack[sp + 1], axis = stack[sp + 2]
                    if right - left <= nodeSize {
                        if left <= right {
                            for i in left...right {
                                let dx = Double(coords[2 * i]) - qx, dy = Double(coords[2 * i + 1]) - qy
                                if dx * dx + dy * dy <= r2 { body(Int(ids[i])) }
                            }
                        }
                        continue
                    }
                    let m = (left + right) >> 1
                    let x = Double(coords[2 * m]), y = Double(coords[2 * m + 1])
                    let dx = x - qx, dy = y - qy
                    if dx * dx + dy * dy <= r2 { body(Int(ids[m])) }
                    if axis == 0 ? qx - r <= x : qy - r <= y {
                        push(left, m - 1, 1 - axis)
                    }
                    if axis == 0 ? qx + r >= x : qy + r >= y {
                        push(m + 1, right, 1 - axis)
                    }
                }
              }
            }
        }
    }

    // MARK: kd-sort

    private static func sort(_ ids: UnsafeMutableBufferPointer<Int32>, _ coords: UnsafeMutableBufferPointer<Float>,
                             _ nodeSize: Int, _ left: Int, _ right: Int, _ axis: Int) {
        if right - left <= nodeSize { return }
        let m = (left + right) >> 1
        select(ids, coords, m, left, right, axis)
        sort(ids, coords, nodeSize, left, m - 1, 1 - axis)
        sort(ids, coords, nodeSize, m + 1, right, 1 - axis)
    }

    /// Floyd-Rivest selection: afterwards items [left, k) are <= item k <= items (k, right] on `axis`.
    private static func select(_ ids: UnsafeMutableBufferPointer<Int32>, _ coords: UnsafeMutableBufferPointer<Float>,
                               _ k: Int, _ left: Int, _ right: Int, _ axis: Int) {
        var left = left, right = right
        while right > left {
            if right - left > 600 {
                let n = Double(right - left + 1)
                let m = Double(k - left + 1)
                let z = CoreMath.log(n)
                let s = 0.5 * CoreMath.exp(2 * z / 3)
                let sd = 0.5 * (z * s * (n - s) / n).squareRoot() * (m - n / 2 < 0 ? -1 : 1)
                let newLeft = max(left, Int((Double(k) - m * s / n + sd).rounded(.down)))
                let newRight = min(right, Int((Double(k) + (n - m) * s / n + sd).rounded(.down)))
                select(ids, coords, k, newLeft, newRight, axis)
            }
            let t = coords[2 * k + axis]
            var i = left
            var j = right
            swapItem(ids, coords, left, k)
            if coords[2 * right + axis] > t { swapItem(ids, coords, left, right) }
            while i < j {
                swapItem(ids, coords, i, j)
                i += 1
                j -= 1
                while coords[2 * i + axis] < t { i += 1 }
                while coords[2 * j + axis] > t { j -= 1 }
            }
            if coords[2 * left + axis] == t {
                swapItem(ids, coords, left, j)
            } else {
                j += 1
                swapItem(ids, coords, j, right)
            }
            if j <= k { left = j + 1 }
            if k <= j { right = j - 1 }
        }
    }

    @inline(__always)
    private static func swapItem(_ ids: UnsafeMutableBufferPointer<Int32>, _ coords: UnsafeMutableBufferPointer<Float>,
                                 _ i: Int, _ j: Int) {
        ids.swapAt(i, j)
        coords.swapAt(2 * i, 2 * j)
        coords.swapAt(2 * i + 1, 2 * j + 1)
    }
}
