// V1+Drags.swift: Drags: begin, move, end, cancel.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The proto message `BeginDragRequest`.
    public struct BeginDragRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `marker_id` = 2; absent decodes to "", which is not encoded.
        public var markerID: String = ""

        public init() {}

        public init(
            layerID: String = "",
            markerID: String = ""
        ) {
            self.layerID = layerID
            self.markerID = markerID
        }
    }

    /// The proto message `BeginDragResponse`.
    public struct BeginDragResponse: ProtoMessage {
        /// Proto field `drag_id` = 1; absent decodes to "", which is not encoded.
        public var dragID: String = ""
        /// Proto field `marker` = 2.
        public var marker: Marker? = nil

        public init() {}

        public init(
            dragID: String = "",
            marker: Marker? = nil
        ) {
            self.dragID = dragID
            self.marker = marker
        }
    }

    /// The proto message `DragToRequest`.
    public struct DragToRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `drag_id` = 2; absent decodes to "", which is not encoded.
        public var dragID: String = ""
        /// Proto field `position` = 3.
        public var position: LatLng? = nil

        public init() {}

        public init(
            layerID: String = "",
            dragID: String = "",
            position: LatLng? = nil
        ) {
            self.layerID = layerID
            self.dragID = dragID
            self.position = position
        }
    }

    /// The proto message `DragToResponse`.
    public struct DragToResponse: ProtoMessage {

        public init() {}
    }

    /// The proto message `EndDragRequest`.
    public struct EndDragRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `drag_id` = 2; absent decodes to "", which is not encoded.
        public var dragID: String = ""
        /// Final position; unset keeps the last DragTo position.
        /// Proto field `position` = 3.
        public var position: LatLng? = nil

        public init() {}

        public init(
            layerID: String = "",
            dragID: String = "",
            position: LatLng? = nil
        ) {
            self.layerID = layerID
            self.dragID = dragID
            self.position = position
        }
    }

    /// The proto message `EndDragResponse`.
    public struct EndDragResponse: ProtoMessage {
        /// Proto field `marker` = 1.
        public var marker: Marker? = nil
        /// Proto field `layer_version` = 2; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            marker: Marker? = nil,
            layerVersion: UInt64 = 0
        ) {
            self.marker = marker
            self.layerVersion = layerVersion
        }
    }

    /// The proto message `CancelDragRequest`.
    public struct CancelDragRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `drag_id` = 2; absent decodes to "", which is not encoded.
        public var dragID: String = ""

        public init() {}

        public init(
            layerID: String = "",
            dragID: String = ""
        ) {
            self.layerID = layerID
            self.dragID = dragID
        }
    }

    /// The proto message `CancelDragResponse`.
    public struct CancelDragResponse: ProtoMessage {
        /// Proto field `marker` = 1.
        public var marker: Marker? = nil

        public init() {}

        public init(
            marker: Marker? = nil
        ) {
            self.marker = marker
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.BeginDragRequest: CBridged {
    static var protoName: String { "BeginDragRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__begin_drag_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__BeginDragRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "BeginDragRequest.layer_id"),
            markerID: try swiftString(c.marker_id, "BeginDragRequest.marker_id")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__BeginDragRequest()
        markerd__v1__begin_drag_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        c.marker_id = arena.cString(self.markerID)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.BeginDragResponse: CBridged {
    static var protoName: String { "BeginDragResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__begin_drag_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__BeginDragResponse.self)
        self.init(
            dragID: try swiftString(c.drag_id, "BeginDragResponse.drag_id"),
            marker: try swiftMessage(c.marker)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__BeginDragResponse()
        markerd__v1__begin_drag_response__init(&c)
        c.drag_id = arena.cString(self.dragID)
        c.marker = arena.message(self.marker)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.DragToRequest: CBridged {
    static var protoName: String { "DragToRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__drag_to_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__DragToRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "DragToRequest.layer_id"),
            dragID: try swiftString(c.drag_id, "DragToRequest.drag_id"),
            position: try swiftMessage(c.position)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__DragToRequest()
        markerd__v1__drag_to_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        c.drag_id = arena.cString(self.dragID)
        c.position = arena.message(self.position)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.DragToResponse: CBridged {
    static var protoName: String { "DragToResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__drag_to_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        self.init()
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__DragToResponse()
        markerd__v1__drag_to_response__init(&c)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.EndDragRequest: CBridged {
    static var protoName: String { "EndDragRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__end_drag_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__EndDragRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "EndDragRequest.layer_id"),
            dragID: try swiftString(c.drag_id, "EndDragRequest.drag_id"),
            position: try swiftMessage(c.position)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__EndDragRequest()
        markerd__v1__end_drag_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        c.drag_id = arena.cString(self.dragID)
        c.position = arena.message(self.position)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.EndDragResponse: CBridged {
    static var protoName: String { "EndDragResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__end_drag_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__EndDragResponse.self)
        self.init(
            marker: try swiftMessage(c.marker),
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__EndDragResponse()
        markerd__v1__end_drag_response__init(&c)
        c.marker = arena.message(self.marker)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.CancelDragRequest: CBridged {
    static var protoName: String { "CancelDragRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__cancel_drag_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__CancelDragRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "CancelDragRequest.layer_id"),
            dragID: try swiftString(c.drag_id, "CancelDragRequest.drag_id")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__CancelDragRequest()
        markerd__v1__cancel_drag_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        c.drag_id = arena.cString(self.dragID)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.CancelDragResponse: CBridged {
    static var protoName: String { "CancelDragResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__cancel_drag_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__CancelDragResponse.self)
        self.init(
            marker: try swiftMessage(c.marker)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__CancelDragResponse()
        markerd__v1__cancel_drag_response__init(&c)
        c.marker = arena.message(self.marker)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}
