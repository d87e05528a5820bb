// V1+Icons.swift: Icons: the default pin and registered PNG icons.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// MapConductor's DefaultMarkerIcon: a 48 px pin (times scale), anchored at its tip (0.5, 1.0).
    public struct DefaultPin: ProtoMessage {
        /// The proto default of `fillColor`.
        public static let defaultFillColor: UInt32 = 0xFFFF0000
        /// The proto default of `strokeColor`.
        public static let defaultStrokeColor: UInt32 = 0xFFFFFFFF
        /// The proto default of `strokeWidth`.
        public static let defaultStrokeWidth: Float = 1
        /// The proto default of `scale`.
        public static let defaultScale: Float = 1
        /// The proto default of `labelColor`.
        public static let defaultLabelColor: UInt32 = 0xFF000000
        /// The proto default of `labelSize`.
        public static let defaultLabelSize: Float = 18

        /// red
        /// nil: absent, meaning the default 0xFFFF0000 (`defaultFillColor`).
        /// Proto field `fill_color` = 1.
        public var fillColor: UInt32? = nil
        /// white
        /// nil: absent, meaning the default 0xFFFFFFFF (`defaultStrokeColor`).
        /// Proto field `stroke_color` = 2.
        public var strokeColor: UInt32? = nil
        /// px
        /// nil: absent, meaning the default 1 (`defaultStrokeWidth`).
        /// Proto field `stroke_width` = 3.
        public var strokeWidth: Float? = nil
        /// icon size 48 px x scale
        /// nil: absent, meaning the default 1 (`defaultScale`).
        /// Proto field `scale` = 4.
        public var scale: Float? = nil
        /// default: no label
        /// Proto field `label` = 5.
        public var label: String? = nil
        /// black
        /// nil: absent, meaning the default 0xFF000000 (`defaultLabelColor`).
        /// Proto field `label_color` = 6.
        public var labelColor: UInt32? = nil
        /// px
        /// nil: absent, meaning the default 18 (`defaultLabelSize`).
        /// Proto field `label_size` = 7.
        public var labelSize: Float? = nil

        public init() {}

        public init(
            fillColor: UInt32? = nil,
            strokeColor: UInt32? = nil,
            strokeWidth: Float? = nil,
            scale: Float? = nil,
            label: String? = nil,
            labelColor: UInt32? = nil,
            labelSize: Float? = nil
        ) {
            self.fillColor = fillColor
            self.strokeColor = strokeColor
            self.strokeWidth = strokeWidth
            self.scale = scale
            self.label = label
            self.labelColor = labelColor
            self.labelSize = labelSize
        }
    }

    /// The proto message `RegisterIconRequest`.
    public struct RegisterIconRequest: ProtoMessage {
        /// 1-128 bytes of [A-Za-z0-9._-].
        /// Proto field `icon_id` = 1; absent decodes to "", which is not encoded.
        public var iconID: String = ""
        /// A PNG file, at most 1 MiB, at most 1024 x 1024 px.
        /// Proto field `png` = 2; absent decodes to [], which is not encoded.
        public var png: [UInt8] = []
        /// Unset: (0.5, 0.5).
        /// Proto field `anchor` = 3.
        public var anchor: Anchor? = nil

        public init() {}

        public init(
            iconID: String = "",
            png: [UInt8] = [],
            anchor: Anchor? = nil
        ) {
            self.iconID = iconID
            self.png = png
            self.anchor = anchor
        }
    }

    /// The proto message `RegisterIconResponse`.
    public struct RegisterIconResponse: ProtoMessage {
        /// Proto field `icon_id` = 1; absent decodes to "", which is not encoded.
        public var iconID: String = ""
        /// Proto field `width` = 2; absent decodes to 0, which is not encoded.
        public var width: UInt32 = 0
        /// Proto field `height` = 3; absent decodes to 0, which is not encoded.
        public var height: UInt32 = 0

        public init() {}

        public init(
            iconID: String = "",
            width: UInt32 = 0,
            height: UInt32 = 0
        ) {
            self.iconID = iconID
            self.width = width
            self.height = height
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.DefaultPin: CBridged {
    static var protoName: String { "DefaultPin" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__default_pin__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__DefaultPin.self)
        self.init(
            fillColor: present(c.has_fill_color, c.fill_color),
            strokeColor: present(c.has_stroke_color, c.stroke_color),
            strokeWidth: present(c.has_stroke_width, c.stroke_width),
            scale: present(c.has_scale, c.scale),
            label: try swiftOptionalString(c.label, "DefaultPin.label"),
            labelColor: present(c.has_label_color, c.label_color),
            labelSize: present(c.has_label_size, c.label_size)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__DefaultPin()
        markerd__v1__default_pin__init(&c)
        setOptional(self.fillColor, &c.has_fill_color, &c.fill_color)
        setOptional(self.strokeColor, &c.has_stroke_color, &c.stroke_color)
        setOptional(self.strokeWidth, &c.has_stroke_width, &c.stroke_width)
        setOptional(self.scale, &c.has_scale, &c.scale)
        c.label = arena.cString(self.label)
        setOptional(self.labelColor, &c.has_label_color, &c.label_color)
        setOptional(self.labelSize, &c.has_label_size, &c.label_size)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.RegisterIconRequest: CBridged {
    static var protoName: String { "RegisterIconRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__register_icon_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__RegisterIconRequest.self)
        self.init(
            iconID: try swiftString(c.icon_id, "RegisterIconRequest.icon_id"),
            png: swiftBytes(c.png.data, c.png.len),
            anchor: try swiftMessage(c.anchor)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__RegisterIconRequest()
        markerd__v1__register_icon_request__init(&c)
        c.icon_id = arena.cString(self.iconID)
        if !self.png.isEmpty {
            c.has_png = 1
            c.png = ProtobufCBinaryData(len: self.png.count, data: arena.bytes(self.png))
        }
        c.anchor = arena.message(self.anchor)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.RegisterIconResponse: CBridged {
    static var protoName: String { "RegisterIconResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__register_icon_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__RegisterIconResponse.self)
        self.init(
            iconID: try swiftString(c.icon_id, "RegisterIconResponse.icon_id"),
            width: c.width,
            height: c.height
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__RegisterIconResponse()
        markerd__v1__register_icon_response__init(&c)
        c.icon_id = arena.cString(self.iconID)
        setPlain(self.width, &c.has_width, &c.width)
        setPlain(self.height, &c.has_height, &c.height)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}
