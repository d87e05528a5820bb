// V1+Geometry.swift: Geometry: points, rectangles and icon anchors.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The proto message `LatLng`.
    public struct LatLng: ProtoMessage {
        /// Proto field `latitude` = 1; absent decodes to 0, which is not encoded.
        public var latitude: Double = 0
        /// Proto field `longitude` = 2; absent decodes to 0, which is not encoded.
        public var longitude: Double = 0

        public init() {}

        public init(
            latitude: Double = 0,
            longitude: Double = 0
        ) {
            self.latitude = latitude
            self.longitude = longitude
        }
    }

    /// A geographic rectangle. west > east means the box crosses the antimeridian.
    public struct Bounds: ProtoMessage {
        /// Proto field `west` = 1; absent decodes to 0, which is not encoded.
        public var west: Double = 0
        /// Proto field `south` = 2; absent decodes to 0, which is not encoded.
        public var south: Double = 0
        /// Proto field `east` = 3; absent decodes to 0, which is not encoded.
        public var east: Double = 0
        /// Proto field `north` = 4; absent decodes to 0, which is not encoded.
        public var north: Double = 0

        public init() {}

        public init(
            west: Double = 0,
            south: Double = 0,
            east: Double = 0,
            north: Double = 0
        ) {
            self.west = west
            self.south = south
            self.east = east
            self.north = north
        }
    }

    /// Icon anchor as a fraction of the icon's width (x, from the left) and height (y, from the top).
    public struct Anchor: ProtoMessage {
        /// Proto field `x` = 1; absent decodes to 0, which is not encoded.
        public var x: Float = 0
        /// Proto field `y` = 2; absent decodes to 0, which is not encoded.
        public var y: Float = 0

        public init() {}

        public init(
            x: Float = 0,
            y: Float = 0
        ) {
            self.x = x
            self.y = y
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.LatLng: CBridged {
    static var protoName: String { "LatLng" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__lat_lng__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__LatLng.self)
        self.init(
            latitude: c.latitude,
            longitude: c.longitude
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__LatLng()
        markerd__v1__lat_lng__init(&c)
        setPlain(self.latitude, &c.has_latitude, &c.latitude)
        setPlain(self.longitude, &c.has_longitude, &c.longitude)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.Bounds: CBridged {
    static var protoName: String { "Bounds" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__bounds__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__Bounds.self)
        self.init(
            west: c.west,
            south: c.south,
            east: c.east,
            north: c.north
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__Bounds()
        markerd__v1__bounds__init(&c)
        setPlain(self.west, &c.has_west, &c.west)
        setPlain(self.south, &c.has_south, &c.south)
        setPlain(self.east, &c.has_east, &c.east)
        setPlain(self.north, &c.has_north, &c.north)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.Anchor: CBridged {
    static var protoName: String { "Anchor" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__anchor__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__Anchor.self)
        self.init(
            x: c.x,
            y: c.y
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__Anchor()
        markerd__v1__anchor__init(&c)
        setPlain(self.x, &c.has_x, &c.x)
        setPlain(self.y, &c.has_y, &c.y)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}
