// V1+Markers.swift: Markers and the marker RPCs.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The proto enum `AnimationKind`.
    public enum AnimationKind: Int32, Sendable, CaseIterable {
        /// No animation (the default).
        case unspecified = 0
        case drop = 1
        case bounce = 2

        /// The canonical proto name, e.g. "ANIMATION_KIND_BOUNCE".
        public var name: String {
            switch self {
            case .unspecified: "ANIMATION_KIND_UNSPECIFIED"
            case .drop: "ANIMATION_KIND_DROP"
            case .bounce: "ANIMATION_KIND_BOUNCE"
            }
        }
    }

    /// The proto message `Animation`.
    public struct Animation: ProtoMessage {
        /// Proto field `kind` = 1; absent decodes to .unspecified, which is not encoded.
        public var kind: AnimationKind = .unspecified
        /// How long the marker animates, from the moment the server applies the upsert.
        /// Proto field `duration_ms` = 2; absent decodes to 0, which is not encoded.
        public var durationMs: UInt32 = 0
        /// Output only: when the animation ends (Unix ms, server clock).
        /// Proto field `ends_at_unix_ms` = 3; absent decodes to 0, which is not encoded.
        public var endsAtUnixMs: Int64 = 0

        public init() {}

        public init(
            kind: AnimationKind = .unspecified,
            durationMs: UInt32 = 0,
            endsAtUnixMs: Int64 = 0
        ) {
            self.kind = kind
            self.durationMs = durationMs
            self.endsAtUnixMs = endsAtUnixMs
        }
    }

    /// The proto message `Marker`.
    public struct Marker: ProtoMessage {
        /// No icon set: a DefaultPin with every default.
        public enum Icon: Sendable, Equatable {
            /// Proto field `pin` = 3.
            case pin(DefaultPin)
            /// A registered icon (RegisterIcon).
            /// Proto field `icon_id` = 4.
            case iconID(String)
        }

        /// The proto default of `clickable`.
        public static let defaultClickable: Bool = true
        /// The proto default of `draggable`.
        public static let defaultDraggable: Bool = false
        /// The proto default of `visible`.
        public static let defaultVisible: Bool = true

        /// 1-256 bytes of UTF-8.
        /// Proto field `id` = 1; absent decodes to "", which is not encoded.
        public var id: String = ""
        /// Proto field `position` = 2.
        public var position: LatLng? = nil
        /// One of the `icon` cases; nil when none is set.
        public var icon: Icon? = nil
        /// Overrides the icon's anchor.
        /// Proto field `anchor` = 5.
        public var anchor: Anchor? = nil
        /// Proto field `z_index` = 6; absent decodes to 0, which is not encoded.
        public var zIndex: Int32 = 0
        /// nil: absent, meaning the default true (`defaultClickable`).
        /// Proto field `clickable` = 7.
        public var clickable: Bool? = nil
        /// nil: absent, meaning the default false (`defaultDraggable`).
        /// Proto field `draggable` = 8.
        public var draggable: Bool? = nil
        /// Proto field `animation` = 9.
        public var animation: Animation? = nil
        /// nil: absent, meaning the default true (`defaultVisible`).
        /// Proto field `visible` = 10.
        public var visible: Bool? = nil
        /// Proto field `attributes` = 11.
        public var attributes: [String: String] = [:]
        /// Proto field `extra` = 12; absent decodes to [], which is not encoded.
        public var extra: [UInt8] = []
        /// The marker's own label settings; unset fields take the layer's LabelOptions.
        /// Proto field `label` = 13.
        public var label: MarkerLabel? = nil

        public init() {}

        public init(
            id: String = "",
            position: LatLng? = nil,
            icon: Icon? = nil,
            anchor: Anchor? = nil,
            zIndex: Int32 = 0,
            clickable: Bool? = nil,
            draggable: Bool? = nil,
            animation: Animation? = nil,
            visible: Bool? = nil,
            attributes: [String: String] = [:],
            extra: [UInt8] = [],
            label: MarkerLabel? = nil
        ) {
            self.id = id
            self.position = position
            self.icon = icon
            self.anchor = anchor
            self.zIndex = zIndex
            self.clickable = clickable
            self.draggable = draggable
            self.animation = animation
            self.visible = visible
            self.attributes = attributes
            self.extra = extra
            self.label = label
        }
    }

    /// The proto message `MarkerLabel`.
    public struct MarkerLabel: ProtoMessage {
        /// At most 256 bytes of UTF-8. Unset: the layer's text_attribute. Empty: no label.
        /// Proto field `text` = 1.
        public var text: String? = nil
        /// Placement rank among markers of equal z_index: higher first. Finite. Unset: the layer's
        /// priority_attribute, else 0.
        /// Proto field `priority` = 2.
        public var priority: Double? = nil
        /// Text colour 0xAARRGGBB. Unset: the layer's.
        /// Proto field `color` = 3.
        public var color: UInt32? = nil

        public init() {}

        public init(
            text: String? = nil,
            priority: Double? = nil,
            color: UInt32? = nil
        ) {
            self.text = text
            self.priority = priority
            self.color = color
        }
    }

    /// The proto message `UpsertMarkersRequest`.
    public struct UpsertMarkersRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// At most 100,000. All or nothing: one invalid marker rejects the whole batch.
        /// Proto field `markers` = 2.
        public var markers: [Marker] = []

        public init() {}

        public init(
            layerID: String = "",
            markers: [Marker] = []
        ) {
            self.layerID = layerID
            self.markers = markers
        }
    }

    /// The proto message `UpsertMarkersResponse`.
    public struct UpsertMarkersResponse: ProtoMessage {
        /// Proto field `created_count` = 1; absent decodes to 0, which is not encoded.
        public var createdCount: UInt64 = 0
        /// Proto field `updated_count` = 2; absent decodes to 0, which is not encoded.
        public var updatedCount: UInt64 = 0
        /// Proto field `layer_version` = 3; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            createdCount: UInt64 = 0,
            updatedCount: UInt64 = 0,
            layerVersion: UInt64 = 0
        ) {
            self.createdCount = createdCount
            self.updatedCount = updatedCount
            self.layerVersion = layerVersion
        }
    }

    /// A partial update of one marker (UpdateMarkers): the fields named in `paths` take their values
    /// from `marker`; every other field keeps its value.
    public struct MarkerUpdate: ProtoMessage {
        /// The marker to change; it must be in the layer.
        /// Proto field `id` = 1; absent decodes to "", which is not encoded.
        public var id: String = ""
        /// The new values of the fields named in `paths` (its id and other fields are ignored). A named
        /// field unset here is reset to its default (e.g. "label" unset removes the marker's label).
        /// Proto field `marker` = 2.
        public var marker: Marker? = nil
        /// Marker field names, each at most once, at least one: "position", "icon" (pin or icon_id;
        /// without "anchor" the anchor becomes the new icon's default), "anchor", "z_index", "clickable",
        /// "draggable", "animation" (starts it again from the server's clock), "visible", "attributes",
        /// "extra", "label", or one field of the label: "label.text", "label.priority", "label.color".
        /// Proto field `paths` = 3.
        public var paths: [String] = []

        public init() {}

        public init(
            id: String = "",
            marker: Marker? = nil,
            paths: [String] = []
        ) {
            self.id = id
            self.marker = marker
            self.paths = paths
        }
    }

    /// The proto message `UpdateMarkersRequest`.
    public struct UpdateMarkersRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// At most 100,000, each id at most once. All or nothing: an unknown path or an invalid value
        /// is INVALID_ARGUMENT naming the field (e.g. "updates[2].paths[0]",
        /// "updates[2].marker.position.latitude"); an id not in the layer is NOT_FOUND. Applied
        /// atomically (under the layer's write lock) and journaled like UpsertMarkers.
        /// Proto field `updates` = 2.
        public var updates: [MarkerUpdate] = []

        public init() {}

        public init(
            layerID: String = "",
            updates: [MarkerUpdate] = []
        ) {
            self.layerID = layerID
            self.updates = updates
        }
    }

    /// The proto message `UpdateMarkersResponse`.
    public struct UpdateMarkersResponse: ProtoMessage {
        /// Proto field `updated_count` = 1; absent decodes to 0, which is not encoded.
        public var updatedCount: UInt64 = 0
        /// Proto field `layer_version` = 2; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            updatedCount: UInt64 = 0,
            layerVersion: UInt64 = 0
        ) {
            self.updatedCount = updatedCount
            self.layerVersion = layerVersion
        }
    }

    /// The proto message `RemoveMarkersRequest`.
    public struct RemoveMarkersRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `ids` = 2.
        public var ids: [String] = []

        public init() {}

        public init(
            layerID: String = "",
            ids: [String] = []
        ) {
            self.layerID = layerID
            self.ids = ids
        }
    }

    /// The proto message `RemoveMarkersResponse`.
    public struct RemoveMarkersResponse: ProtoMessage {
        /// Proto field `removed_count` = 1; absent decodes to 0, which is not encoded.
        public var removedCount: UInt64 = 0
        /// Proto field `not_found_count` = 2; absent decodes to 0, which is not encoded.
        public var notFoundCount: UInt64 = 0
        /// Proto field `layer_version` = 3; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            removedCount: UInt64 = 0,
            notFoundCount: UInt64 = 0,
            layerVersion: UInt64 = 0
        ) {
            self.removedCount = removedCount
            self.notFoundCount = notFoundCount
            self.layerVersion = layerVersion
        }
    }

    /// The proto message `GetMarkersRequest`.
    public struct GetMarkersRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `ids` = 2.
        public var ids: [String] = []

        public init() {}

        public init(
            layerID: String = "",
            ids: [String] = []
        ) {
            self.layerID = layerID
            self.ids = ids
        }
    }

    /// The proto message `GetMarkersResponse`.
    public struct GetMarkersResponse: ProtoMessage {
        /// Found markers, in request order, with every default filled in.
        /// Proto field `markers` = 1.
        public var markers: [Marker] = []
        /// Proto field `missing_ids` = 2.
        public var missingIDs: [String] = []

        public init() {}

        public init(
            markers: [Marker] = [],
            missingIDs: [String] = []
        ) {
            self.markers = markers
            self.missingIDs = missingIDs
        }
    }

    /// Every marker of a layer, paged: static, live and hidden ones alike (QueryViewport returns the
    /// visible ones in a viewport, and of a TILED layer only the live ones). For exports and backups.
    public struct ListMarkersRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Markers per page, 0-100,000; 0 means 1000.
        /// Proto field `page_size` = 2; absent decodes to 0, which is not encoded.
        public var pageSize: UInt32 = 0
        /// See the paging rule in the header. The next page holds the markers after the previous
        /// page's last one in the layer's storage order, as the layer is when it is asked for: a marker
        /// that stays in the layer while a client pages (moved, updated or not) comes exactly once; one
        /// added meanwhile (also removed and added again) comes once or not at all; one removed
        /// meanwhile comes only if its page came before. The storage order is the server process's:
        /// after a restart, a token from before it may skip or repeat markers (start again).
        /// Proto field `page_token` = 3; absent decodes to "", which is not encoded.
        public var pageToken: String = ""

        public init() {}

        public init(
            layerID: String = "",
            pageSize: UInt32 = 0,
            pageToken: String = ""
        ) {
            self.layerID = layerID
            self.pageSize = pageSize
            self.pageToken = pageToken
        }
    }

    /// The proto message `ListMarkersResponse`.
    public struct ListMarkersResponse: ProtoMessage {
        /// In the layer's storage order (not by id, position or draw order), with every default filled
        /// in. A page may hold fewer than page_size markers, even none, before the last one (each page
        /// looks at a bounded part of the storage): only an empty next_page_token ends the list.
        /// Proto field `markers` = 1.
        public var markers: [Marker] = []
        /// Proto field `next_page_token` = 2; absent decodes to "", which is not encoded.
        public var nextPageToken: String = ""
        /// The layer's version when the page was read.
        /// Proto field `layer_version` = 3; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            markers: [Marker] = [],
            nextPageToken: String = "",
            layerVersion: UInt64 = 0
        ) {
            self.markers = markers
            self.nextPageToken = nextPageToken
            self.layerVersion = layerVersion
        }
    }

    /// The proto message `ClearLayerRequest`.
    public struct ClearLayerRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""

        public init() {}

        public init(
            layerID: String = ""
        ) {
            self.layerID = layerID
        }
    }

    /// The proto message `ClearLayerResponse`.
    public struct ClearLayerResponse: ProtoMessage {
        /// Proto field `removed_count` = 1; absent decodes to 0, which is not encoded.
        public var removedCount: UInt64 = 0
        /// Proto field `layer_version` = 2; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            removedCount: UInt64 = 0,
            layerVersion: UInt64 = 0
        ) {
            self.removedCount = removedCount
            self.layerVersion = layerVersion
        }
    }

    /// The proto message `MarkerMove`.
    public struct MarkerMove: ProtoMessage {
        /// Proto field `id` = 1; absent decodes to "", which is not encoded.
        public var id: String = ""
        /// Proto field `position` = 2.
        public var position: LatLng? = nil

        public init() {}

        public init(
            id: String = "",
            position: LatLng? = nil
        ) {
            self.id = id
            self.position = position
        }
    }

    /// The proto message `MoveMarkersRequest`.
    public struct MoveMarkersRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// At most 100,000. Invalid positions reject the whole batch; unknown ids are reported.
        /// Proto field `moves` = 2.
        public var moves: [MarkerMove] = []

        public init() {}

        public init(
            layerID: String = "",
            moves: [MarkerMove] = []
        ) {
            self.layerID = layerID
            self.moves = moves
        }
    }

    /// The proto message `MoveMarkersResponse`.
    public struct MoveMarkersResponse: ProtoMessage {
        /// Proto field `moved_count` = 1; absent decodes to 0, which is not encoded.
        public var movedCount: UInt64 = 0
        /// Proto field `not_found_ids` = 2.
        public var notFoundIDs: [String] = []
        /// Proto field `layer_version` = 3; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            movedCount: UInt64 = 0,
            notFoundIDs: [String] = [],
            layerVersion: UInt64 = 0
        ) {
            self.movedCount = movedCount
            self.notFoundIDs = notFoundIDs
            self.layerVersion = layerVersion
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.AnimationKind: ProtoEnum {
    /// Unknown numbers on the wire decode to `.unspecified`.
    static var fallback: Self { .unspecified }
}

extension V1.Animation: CBridged {
    static var protoName: String { "Animation" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__animation__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__Animation.self)
        self.init(
            kind: swiftEnum(c.kind),
            durationMs: c.duration_ms,
            endsAtUnixMs: c.ends_at_unix_ms
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__Animation()
        markerd__v1__animation__init(&c)
        setPlain(self.kind, &c.has_kind, &c.kind)
        setPlain(self.durationMs, &c.has_duration_ms, &c.duration_ms)
        setPlain(self.endsAtUnixMs, &c.has_ends_at_unix_ms, &c.ends_at_unix_ms)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.Marker: CBridged {
    static var protoName: String { "Marker" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__marker__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__Marker.self)
        var icon: Icon? = nil
        switch c.icon_case {
        case MARKERD__V1__MARKER__ICON_PIN:
            if let value: V1.DefaultPin = try swiftMessage(c.pin) { icon = .pin(value) }
        case MARKERD__V1__MARKER__ICON_ICON_ID:
            icon = .iconID(try swiftString(c.icon_id, "Marker.icon_id"))
        default:
            break
        }
        self.init(
            id: try swiftString(c.id, "Marker.id"),
            position: try swiftMessage(c.position),
            icon: icon,
            anchor: try swiftMessage(c.anchor),
            zIndex: c.z_index,
            clickable: present(c.has_clickable, c.clickable),
            draggable: present(c.has_draggable, c.draggable),
            animation: try swiftMessage(c.animation),
            visible: present(c.has_visible, c.visible),
            attributes: try swiftStringMap(c.n_attributes, c.attributes),
            extra: swiftBytes(c.extra.data, c.extra.len),
            label: try swiftMessage(c.label)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__Marker()
        markerd__v1__marker__init(&c)
        c.id = arena.cString(self.id)
        c.position = arena.message(self.position)
        switch self.icon {
        case .pin(let value)?:
            c.icon_case = MARKERD__V1__MARKER__ICON_PIN
            c.pin = arena.message(value)
        case .iconID(let value)?:
            c.icon_case = MARKERD__V1__MARKER__ICON_ICON_ID
            c.icon_id = arena.cString(present: value)
        case nil:
            break
        }
        c.anchor = arena.message(self.anchor)
        setPlain(self.zIndex, &c.has_z_index, &c.z_index)
        setOptional(self.clickable, &c.has_clickable, &c.clickable)
        setOptional(self.draggable, &c.has_draggable, &c.draggable)
        c.animation = arena.message(self.animation)
        setOptional(self.visible, &c.has_visible, &c.visible)
        (c.n_attributes, c.attributes) = arena.stringMap(self.attributes)
        if !self.extra.isEmpty {
            c.has_extra = 1
            c.extra = ProtobufCBinaryData(len: self.extra.count, data: arena.bytes(self.extra))
        }
        c.label = arena.message(self.label)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.MarkerLabel: CBridged {
    static var protoName: String { "MarkerLabel" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__marker_label__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__MarkerLabel.self)
        self.init(
            text: try swiftOptionalString(c.text, "MarkerLabel.text"),
            priority: present(c.has_priority, c.priority),
            color: present(c.has_color, c.color)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__MarkerLabel()
        markerd__v1__marker_label__init(&c)
        c.text = arena.cString(self.text)
        setOptional(self.priority, &c.has_priority, &c.priority)
        setOptional(self.color, &c.has_color, &c.color)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.UpsertMarkersRequest: CBridged {
    static var protoName: String { "UpsertMarkersRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__upsert_markers_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__UpsertMarkersRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "UpsertMarkersRequest.layer_id"),
            markers: try swiftMessages(c.n_markers, c.markers)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__UpsertMarkersRequest()
        markerd__v1__upsert_markers_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        (c.n_markers, c.markers) = arena.messages(self.markers)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.UpsertMarkersResponse: CBridged {
    static var protoName: String { "UpsertMarkersResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__upsert_markers_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__UpsertMarkersResponse.self)
        self.init(
            createdCount: c.created_count,
            updatedCount: c.updated_count,
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__UpsertMarkersResponse()
        markerd__v1__upsert_markers_response__init(&c)
        setPlain(self.createdCount, &c.has_created_count, &c.created_count)
        setPlain(self.updatedCount, &c.has_updated_count, &c.updated_count)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.MarkerUpdate: CBridged {
    static var protoName: String { "MarkerUpdate" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__marker_update__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__MarkerUpdate.self)
        self.init(
            id: try swiftString(c.id, "MarkerUpdate.id"),
            marker: try swiftMessage(c.marker),
            paths: try swiftStrings(c.n_paths, c.paths, "MarkerUpdate.paths")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__MarkerUpdate()
        markerd__v1__marker_update__init(&c)
        c.id = arena.cString(self.id)
        c.marker = arena.message(self.marker)
        (c.n_paths, c.paths) = arena.strings(self.paths)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.UpdateMarkersRequest: CBridged {
    static var protoName: String { "UpdateMarkersRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__update_markers_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__UpdateMarkersRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "UpdateMarkersRequest.layer_id"),
            updates: try swiftMessages(c.n_updates, c.updates)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__UpdateMarkersRequest()
        markerd__v1__update_markers_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        (c.n_updates, c.updates) = arena.messages(self.updates)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.UpdateMarkersResponse: CBridged {
    static var protoName: String { "UpdateMarkersResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__update_markers_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__UpdateMarkersResponse.self)
        self.init(
            updatedCount: c.updated_count,
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__UpdateMarkersResponse()
        markerd__v1__update_markers_response__init(&c)
        setPlain(self.updatedCount, &c.has_updated_count, &c.updated_count)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.RemoveMarkersRequest: CBridged {
    static var protoName: String { "RemoveMarkersRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__remove_markers_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__RemoveMarkersRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "RemoveMarkersRequest.layer_id"),
            ids: try swiftStrings(c.n_ids, c.ids, "RemoveMarkersRequest.ids")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__RemoveMarkersRequest()
        markerd__v1__remove_markers_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        (c.n_ids, c.ids) = arena.strings(self.ids)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.RemoveMarkersResponse: CBridged {
    static var protoName: String { "RemoveMarkersResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__remove_markers_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__RemoveMarkersResponse.self)
        self.init(
            removedCount: c.removed_count,
            notFoundCount: c.not_found_count,
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__RemoveMarkersResponse()
        markerd__v1__remove_markers_response__init(&c)
        setPlain(self.removedCount, &c.has_removed_count, &c.removed_count)
        setPlain(self.notFoundCount, &c.has_not_found_count, &c.not_found_count)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetMarkersRequest: CBridged {
    static var protoName: String { "GetMarkersRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_markers_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetMarkersRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "GetMarkersRequest.layer_id"),
            ids: try swiftStrings(c.n_ids, c.ids, "GetMarkersRequest.ids")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetMarkersRequest()
        markerd__v1__get_markers_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        (c.n_ids, c.ids) = arena.strings(self.ids)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetMarkersResponse: CBridged {
    static var protoName: String { "GetMarkersResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_markers_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetMarkersResponse.self)
        self.init(
            markers: try swiftMessages(c.n_markers, c.markers),
            missingIDs: try swiftStrings(c.n_missing_ids, c.missing_ids, "GetMarkersResponse.missing_ids")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetMarkersResponse()
        markerd__v1__get_markers_response__init(&c)
        (c.n_markers, c.markers) = arena.messages(self.markers)
        (c.n_missing_ids, c.missing_ids) = arena.strings(self.missingIDs)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.ListMarkersRequest: CBridged {
    static var protoName: String { "ListMarkersRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__list_markers_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__ListMarkersRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "ListMarkersRequest.layer_id"),
            pageSize: c.page_size,
            pageToken: try swiftString(c.page_token, "ListMarkersRequest.page_token")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__ListMarkersRequest()
        markerd__v1__list_markers_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        setPlain(self.pageSize, &c.has_page_size, &c.page_size)
        c.page_token = arena.cString(self.pageToken)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.ListMarkersResponse: CBridged {
    static var protoName: String { "ListMarkersResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__list_markers_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__ListMarkersResponse.self)
        self.init(
            markers: try swiftMessages(c.n_markers, c.markers),
            nextPageToken: try swiftString(c.next_page_token, "ListMarkersResponse.next_page_token"),
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__ListMarkersResponse()
        markerd__v1__list_markers_response__init(&c)
        (c.n_markers, c.markers) = arena.messages(self.markers)
        c.next_page_token = arena.cString(self.nextPageToken)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.ClearLayerRequest: CBridged {
    static var protoName: String { "ClearLayerRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__clear_layer_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__ClearLayerRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "ClearLayerRequest.layer_id")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__ClearLayerRequest()
        markerd__v1__clear_layer_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.ClearLayerResponse: CBridged {
    static var protoName: String { "ClearLayerResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__clear_layer_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__ClearLayerResponse.self)
        self.init(
            removedCount: c.removed_count,
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__ClearLayerResponse()
        markerd__v1__clear_layer_response__init(&c)
        setPlain(self.removedCount, &c.has_removed_count, &c.removed_count)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.MarkerMove: CBridged {
    static var protoName: String { "MarkerMove" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__marker_move__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__MarkerMove.self)
        self.init(
            id: try swiftString(c.id, "MarkerMove.id"),
            position: try swiftMessage(c.position)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__MarkerMove()
        markerd__v1__marker_move__init(&c)
        c.id = arena.cString(self.id)
        c.position = arena.message(self.position)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.MoveMarkersRequest: CBridged {
    static var protoName: String { "MoveMarkersRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__move_markers_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__MoveMarkersRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "MoveMarkersRequest.layer_id"),
            moves: try swiftMessages(c.n_moves, c.moves)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__MoveMarkersRequest()
        markerd__v1__move_markers_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        (c.n_moves, c.moves) = arena.messages(self.moves)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.MoveMarkersResponse: CBridged {
    static var protoName: String { "MoveMarkersResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__move_markers_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__MoveMarkersResponse.self)
        self.init(
            movedCount: c.moved_count,
            notFoundIDs: try swiftStrings(c.n_not_found_ids, c.not_found_ids, "MoveMarkersResponse.not_found_ids"),
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__MoveMarkersResponse()
        markerd__v1__move_markers_response__init(&c)
        setPlain(self.movedCount, &c.has_moved_count, &c.moved_count)
        (c.n_not_found_ids, c.not_found_ids) = arena.strings(self.notFoundIDs)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

// MARK: - map<string, string> attributes

/// Decodes `Marker.attributes`; a repeated key keeps the last value (proto semantics).
private func swiftStringMap(_ count: Int, _ entries: UnsafeMutablePointer<UnsafeMutablePointer<Markerd__V1__Marker__AttributesEntry>?>?) throws(InvalidUTF8) -> [String: String] {
    guard count > 0, let entries else { return [:] }
    var map: [String: String] = [:]
    map.reserveCapacity(count)
    for i in 0..<count {
        guard let entry = entries[i]?.pointee else { continue }
        map[try swiftString(entry.key, "Marker.attributes.key")] = try swiftString(entry.value, "Marker.attributes.value")
    }
    return map
}

extension Arena {
    /// Encodes `Marker.attributes` with keys in ascending byte order, so the bytes are deterministic.
    /// Key and value are always written, as other protobuf implementations do for map entries.
    fileprivate func stringMap(_ map: [String: String]) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<Markerd__V1__Marker__AttributesEntry>?>?) {
        if map.isEmpty { return (0, nil) }
        let keys = map.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let array = allocate(keys.count * MemoryLayout<UnsafeMutableRawPointer>.stride, alignment: 8)
            .bindMemory(to: UnsafeMutablePointer<Markerd__V1__Marker__AttributesEntry>?.self, capacity: keys.count)
        for (i, key) in keys.enumerated() {
            var entry = Markerd__V1__Marker__AttributesEntry()
            markerd__v1__marker__attributes_entry__init(&entry)
            entry.key = cString(present: key)
            entry.value = cString(present: map[key]!)
            array[i] = store(entry)
        }
        return (keys.count, array)
    }
}
