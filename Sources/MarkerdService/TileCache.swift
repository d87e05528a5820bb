import Foundation
import Synchronization

/// Rendered tiles by (layer, z, x, y, tile size, density, version, kind), least recently used
/// first out when the bytes held exceed the capacity. Raster tiles (PNG) and point tiles (MVT,
/// `Key.Kind.point`) share the cache and its byte budget. Because the version is in the key, a
/// changed tile is simply a new key; stale entries age out.
///
/// Concurrent requests for a key that is not cached render it once: the first caller renders
/// (outside the cache's lock), the others wait for its result. A failed render is not cached.
public final class TileCache: @unchecked Sendable {
    public struct Key: Hashable, Sendable {
        /// What a key names.
        public enum Kind: Hashable, Sendable {
            /// A raster tile (PNG) of `tileSize` and `density`.
            case raster
            /// A point tile (MVT) of `extent` units, clustered or not (`tileSize` and `density` 0).
            case point(extent: Int, clustered: Bool)
        }
        public var layer: String
        public var z: Int
        public var x: UInt32
        public var y: UInt32
        public var tileSize: Int
        public var density: Int
        public var version: UInt64
        public var kind: Kind
        public init(layer: String, z: Int, x: UInt32, y: UInt32, tileSize: Int, density: Int, version: UInt64, kind: Kind = .raster) {
            self.layer = layer; self.z = z; self.x = x; self.y = y
            self.tileSize = tileSize; self.density = density; self.version = version; self.kind = kind
        }
    }

    public struct Tile: Sendable {
        /// The encoded tile: PNG for raster keys, MVT for point keys.
        public var png: [UInt8]
        /// No marker touches the tile (`png` is the shared transparent tile).
        public var empty: Bool
        public init(png: [UInt8], empty: Bool) { self.png = png; self.empty = empty }
    }

    /// Bytes charged per entry besides its encoded tile (key, node, dictionary slot).
    public static let overheadBytes = 128

    /// Capacity in bytes (encoded bytes plus `overheadBytes` per entry; shared empty tiles count only
    /// the overhead). 0 disables caching (concurrent renders are still shared).
    public let capacityBytes: Int

    private enum Role { case hit(Tile), wait(Flight), render(Flight) }

    private final class Flight: @unchecked Sendable {
        let condition = NSCondition()
        var result: Result<Tile, Error>?  // guarded by condition
    }

    private struct Node {
        var key: Key
        var tile: Tile
        var bytes: Int
        var prev: Int
        var next: Int
    }

    /// Guarded by `lock`: the LRU list (head = most recent) threaded through `nodes`.
    private struct State {
        var index: [Key: Int] = [:]
        var nodes: [Node] = []
        var free: [Int] = []
        var head = -1
        var tail = -1
        var bytes = 0
        var flights: [Key: Flight] = [:]
        var hits = 0
        var misses = 0
        var evictions = 0
    }
    private let lock = Mutex<State>(State())

    public init(capacityBytes: Int = 256 << 20) {
        self.capacityBytes = max(0, capacityBytes)
    }

    /// The cached tile, or the result of `render` (run once per key however many callers ask at
    /// the same time). Rethrows the render's error to every caller waiting for it.
    public func tile<E: Error>(_ key: Key, render: () throws(E) -> Tile) throws(E) -> Tile {
        let role: Role = lock.withLock { s in
            if let i = s.index[key] {
                s.hits += 1
                Self.unlink(&s, i)
                Self.pushFront(&s, i)
                return .hit(s.nodes[i].tile)
            }
            if let f = s.flights[key] { s.hits += 1; return .wait(f) }
            s.misses += 1
            let f = Flight()
            s.flights[key] = f
            return .render(f)
        }
        switch role {
        case .hit(let t):
            return t
        case .wait(let f):
            f.condition.lock()
            while f.result == nil { f.condition.wait() }
            let r = f.result!
            f.condition.unlock()
            switch r {
            case .success(let t): return t
            case .failure(let e): throw e as! E
            }
        case .render(let f):
            let result: Result<Tile, E>
            do throws(E) { result = .success(try render()) } catch { result = .failure(error) }
            lock.withLock { s in
                s.flights[key] = nil
                if case .success(let t) = result { insert(&s, key, t) }
            }
            f.condition.lock()
            switch result {
            case .success(let t): f.result = .success(t)
            case .failure(let e): f.result = .failure(e)
            }
            f.condition.broadcast()
            f.condition.unlock()
            return try result.get()
        }
    }

    /// The cached tile, without rendering.
    public func cached(_ key: Key) -> Tile? {
        lock.withLock { s in s.index[key].map { s.nodes[$0].tile } }
    }

    /// The cached tile, counted as a hit and made the most recently used (as `tile(_:render:)`
    /// does), or nil without rendering or waiting for a render in flight.
    public func hit(_ key: Key) -> Tile? {
        lock.withLock { s in
            guard let i = s.index[key] else { return nil }
            s.hits += 1
            Self.unlink(&s, i)
            Self.pushFront(&s, i)
            return s.nodes[i].tile
        }
    }

    /// Counters: entries, bytes held, hits (including callers that waited for a render in
    /// flight), misses (renders), evictions.
    public var stats: (entries: Int, bytes: Int, hits: Int, misses: Int, evictions: Int) {
        lock.withLock { ($0.index.count, $0.bytes, $0.hits, $0.misses, $0.evictions) }
    }

    /// Drops every entry.
    public func removeAll() {
        lock.withLock { s in
            let flights = s.flights
            s = State()
            s.flights = flights
        }
    }

    private func insert(_ s: inout State, _ key: Key, _ tile: Tile) {
        let bytes = (tile.empty ? 0 : tile.png.count) + Self.overheadBytes
        guard bytes <= capacityBytes, s.index[key] == nil else { return }
        let node = Node(key: key, tile: tile, bytes: bytes, prev: -1, next: -1)
        let i: Int
        if let f = s.free.popLast() { i = f; s.nodes[i] = node } else { i = s.nodes.count; s.nodes.append(node) }
        s.index[key] = i
        Self.pushFront(&s, i)
        s.bytes += bytes
        while s.bytes > capacityBytes, s.tail >= 0 {
            let victim = s.tail
            Self.unlink(&s, victim)
            s.bytes -= s.nodes[victim].bytes
            s.index[s.nodes[victim].key] = nil
            s.nodes[victim].tile = Tile(png: [], empty: true)
            s.free.append(victim)
            s.evictions += 1
        }
    }

    private static func unlink(_ s: inout State, _ i: Int) {
        let p = s.nodes[i].prev, n = s.nodes[i].next
        if p >= 0 { s.nodes[p].next = n } else { s.head = n }
        if n >= 0 { s.nodes[n].prev = p } else { s.tail = p }
        s.nodes[i].prev = -1; s.nodes[i].next = -1
    }

    private static func pushFront(_ s: inout State, _ i: Int) {
        s.nodes[i].prev = -1
        s.nodes[i].next = s.head
        if s.head >= 0 { s.nodes[s.head].prev = i }
        s.head = i
        if s.tail < 0 { s.tail = i }
    }
}
