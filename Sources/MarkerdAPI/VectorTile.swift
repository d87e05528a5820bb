// VectorTile.swift: Mapbox Vector Tile (spec 2.1) encoding of point layers, over the protobuf-c code
// generated from Protos/vector_tile/vector_tile.proto (hand-written, not generated: the tile is
// built directly as protobuf-c structs).
private import CMarkerdProto
private import CProtobufC

/// A Mapbox Vector Tile 2.1 layer of POINT features (what `GetPointTile` returns), encodable as a
/// whole tile with this one layer.
///
/// Geometry: one MoveTo command per feature with its zigzag-encoded tile coordinates (origin at the
/// tile's top-left corner, y down, `extent` units per tile side; features in the buffer lie outside
/// 0..<extent). Properties: keys and values are deduplicated into the layer's dictionaries in order
/// of first use, so the bytes are deterministic for the same features.
public struct VectorTilePointLayer: Sendable, Equatable {
    /// A property value (the MVT `Value` variants markerd uses).
    public enum Value: Sendable, Hashable {
        case string(String)
        case uint(UInt64)
        case int(Int64)
        case double(Double)
        case bool(Bool)
    }

    /// One POINT feature.
    public struct Feature: Sendable, Equatable {
        /// Feature id (`Feature.id`); nil: not encoded.
        public var id: UInt64?
        /// Tile coordinates (may lie outside 0..<extent, in the buffer).
        public var x: Int32
        public var y: Int32
        /// Properties in the order to encode; a repeated key keeps every pair (avoid it).
        public var properties: [(key: String, value: Value)]

        public init(id: UInt64? = nil, x: Int32, y: Int32, properties: [(key: String, value: Value)] = []) {
            self.id = id
            self.x = x
            self.y = y
            self.properties = properties
        }

        public static func == (a: Feature, b: Feature) -> Bool {
            a.id == b.id && a.x == b.x && a.y == b.y && a.properties.count == b.properties.count
                && zip(a.properties, b.properties).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        }
    }

    /// Layer name (spec: required, unique within the tile).
    public var name: String
    /// Tile extent in units. Default 4096.
    public var extent: UInt32
    public var features: [Feature]

    public init(name: String, extent: UInt32 = 4096, features: [Feature] = []) {
        self.name = name
        self.extent = extent
        self.features = features
    }

    /// ZigZag encoding of a command parameter (spec 4.3.2).
    @inline(__always)
    public static func zigzag(_ n: Int32) -> UInt32 { UInt32(bitPattern: (n << 1) ^ (n >> 31)) }

    /// The encoded tile (a `Tile` message with this single layer, version 2).
    public func encodedTile() -> [UInt8] {
        let arena = Arena(capacity: 4096 + features.count * 96)
        defer { arena.release() }

        // Dictionaries.
        var keyIndex: [String: UInt32] = [:]
        var keys: [String] = []
        var valueIndex: [Value: UInt32] = [:]
        var values: [Value] = []
        var tagLists: [[UInt32]] = []
        tagLists.reserveCapacity(features.count)
        for f in features {
            var tags: [UInt32] = []
            tags.reserveCapacity(f.properties.count * 2)
            for (k, v) in f.properties {
                let ki: UInt32
                if let i = keyIndex[k] { ki = i } else { ki = UInt32(keys.count); keyIndex[k] = ki; keys.append(k) }
                let vi: UInt32
                if let i = valueIndex[v] { vi = i } else { vi = UInt32(values.count); valueIndex[v] = vi; values.append(v) }
                tags.append(ki); tags.append(vi)
            }
            tagLists.append(tags)
        }

        var layer = VectorTile__Tile__Layer()
        vector_tile__tile__layer__init(&layer)
        layer.version = 2
        layer.name = arena.cString(present: name)
        layer.has_extent = 1
        layer.extent = extent

        // Features.
        let featurePointers = arena.allocate(max(1, features.count) * MemoryLayout<UnsafeMutableRawPointer>.stride, alignment: 8)
            .bindMemory(to: UnsafeMutablePointer<VectorTile__Tile__Feature>?.self, capacity: max(1, features.count))
        for (i, f) in features.enumerated() {
            var cf = VectorTile__Tile__Feature()
            vector_tile__tile__feature__init(&cf)
            if let id = f.id {
                cf.has_id = 1
                cf.id = id
            }
            cf.has_type = 1
            cf.type = VECTOR_TILE__TILE__GEOM_TYPE__POINT
            let geometry = arena.allocate(3 * 4, alignment: 4).bindMemory(to: UInt32.self, capacity: 3)
            geometry[0] = 1 | (1 << 3) // MoveTo, count 1
            geometry[1] = Self.zigzag(f.x)
            geometry[2] = Self.zigzag(f.y)
            cf.n_geometry = 3
            cf.geometry = geometry
            let tags = tagLists[i]
            if !tags.isEmpty {
                let t = arena.allocate(tags.count * 4, alignment: 4).bindMemory(to: UInt32.self, capacity: tags.count)
                for (j, v) in tags.enumerated() { t[j] = v }
                cf.n_tags = tags.count
                cf.tags = t
            }
            featurePointers[i] = arena.store(cf)
        }
        layer.n_features = features.count
        layer.features = features.isEmpty ? nil : featurePointers

        // Keys and values.
        (layer.n_keys, layer.keys) = arena.strings(keys)
        if !values.isEmpty {
            let vp = arena.allocate(values.count * MemoryLayout<UnsafeMutableRawPointer>.stride, alignment: 8)
                .bindMemory(to: UnsafeMutablePointer<VectorTile__Tile__Value>?.self, capacity: values.count)
            for (i, v) in values.enumerated() {
                var cv = VectorTile__Tile__Value()
                vector_tile__tile__value__init(&cv)
                switch v {
                case .string(let s): cv.string_value = arena.cString(present: s)
                case .uint(let u): cv.has_uint_value = 1; cv.uint_value = u
                case .int(let n): cv.has_sint_value = 1; cv.sint_value = n
                case .double(let d): cv.has_double_value = 1; cv.double_value = d
                case .bool(let b): cv.has_bool_value = 1; cv.bool_value = b ? 1 : 0
                }
                vp[i] = arena.store(cv)
            }
            layer.n_values = values.count
            layer.values = vp
        }

        var tile = VectorTile__Tile()
        vector_tile__tile__init(&tile)
        let layers = arena.allocate(MemoryLayout<UnsafeMutableRawPointer>.stride, alignment: 8)
            .bindMemory(to: UnsafeMutablePointer<VectorTile__Tile__Layer>?.self, capacity: 1)
        layers[0] = arena.store(layer)
        tile.n_layers = 1
        tile.layers = layers
        return withUnsafePointer(to: &tile) { t in
            let size = vector_tile__tile__get_packed_size(t)
            return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                if size > 0 { _ = vector_tile__tile__pack(t, buffer.baseAddress!) }
                count = size
            }
        }
    }

    /// Decodes the first layer of an encoded tile with protobuf-c (for tests and tools; POINT
    /// features with one MoveTo only). Nil when the bytes are not a tile or hold no layer.
    public static func decodeFirstLayer(_ bytes: [UInt8]) -> VectorTilePointLayer? {
        bytes.withUnsafeBytes { raw -> VectorTilePointLayer? in
            guard let t = vector_tile__tile__unpack(nil, raw.count, raw.cBytes) else { return nil }
            defer { vector_tile__tile__free_unpacked(t, nil) }
            guard t.pointee.n_layers > 0, let lp = t.pointee.layers?[0] else { return nil }
            let l = lp.pointee
            let keys = (0..<l.n_keys).map { String(cString: l.keys[$0]!) }
            let values: [Value] = (0..<l.n_values).map { i in
                let v = l.values[i]!.pointee
                if let s = v.string_value { return .string(String(cString: s)) }
                if v.has_uint_value != 0 { return .uint(v.uint_value) }
                if v.has_sint_value != 0 { return .int(v.sint_value) }
                if v.has_int_value != 0 { return .int(v.int_value) }
                if v.has_double_value != 0 { return .double(v.double_value) }
                if v.has_float_value != 0 { return .double(Double(v.float_value)) }
                return .bool(v.bool_value != 0)
            }
            var out = VectorTilePointLayer(name: String(cString: l.name), extent: l.extent)
            for i in 0..<l.n_features {
                let f = l.features[i]!.pointee
                guard f.n_geometry >= 3 else { continue }
                func unzig(_ u: UInt32) -> Int32 { Int32(bitPattern: (u >> 1) ^ (0 &- (u & 1))) }
                var props: [(key: String, value: Value)] = []
                var j = 0
                while j + 1 < f.n_tags {
                    props.append((keys[Int(f.tags[j])], values[Int(f.tags[j + 1])]))
                    j += 2
                }
                out.features.append(Feature(id: f.has_id != 0 ? f.id : nil, x: unzig(f.geometry[1]), y: unzig(f.geometry[2]),
                                            properties: props))
            }
            return out
        }
    }
}
