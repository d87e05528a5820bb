// V1+Storage.swift: On-disk formats (storage.proto): journal records and snapshot sections. Not part of the RPC API.
// Types mirror Protos/markerd/v1/storage.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// One journaled mutation: the request exactly as applied, so replay re-applies it. Or, with
    /// `version_ceiling` set and no `method`, a version reservation (see version_ceiling).
    public struct JournalRecord: ProtoMessage {
        /// Monotonic sequence number, starting at 1.
        /// Proto field `sequence` = 1; absent decodes to 0, which is not encoded.
        public var sequence: UInt64 = 0
        /// Full method name, as in Request.method.
        /// Proto field `method` = 2; absent decodes to "", which is not encoded.
        public var method: String = ""
        /// Proto field `idempotency_key` = 3; absent decodes to "", which is not encoded.
        public var idempotencyKey: String = ""
        /// The method's request message.
        /// Proto field `payload` = 4; absent decodes to [], which is not encoded.
        public var payload: [UInt8] = []
        /// Server clock when it was applied (Unix ms); replay uses it for animation ends.
        /// Proto field `applied_at_unix_ms` = 5; absent decodes to 0, which is not encoded.
        public var appliedAtUnixMs: Int64 = 0
        /// The serialized Response (envelope) that was sent, for idempotent replays after restart.
        /// Proto field `response` = 6; absent decodes to [], which is not encoded.
        public var response: [UInt8] = []
        /// Digest of method + payload, to detect a key reused for another request.
        /// Proto field `request_digest` = 7; absent decodes to 0, which is not encoded.
        public var requestDigest: UInt64 = 0
        /// A version reservation (a record with no method): once it is durable, layer versions and
        /// drag ids up to this one may be handed out, none above it before a higher reservation is.
        /// Recovery starts every layer above the highest reservation it finds, so versions and drag ids
        /// handed out before a crash are never used again.
        /// Proto field `version_ceiling` = 8; absent decodes to 0, which is not encoded.
        public var versionCeiling: UInt64 = 0

        public init() {}

        public init(
            sequence: UInt64 = 0,
            method: String = "",
            idempotencyKey: String = "",
            payload: [UInt8] = [],
            appliedAtUnixMs: Int64 = 0,
            response: [UInt8] = [],
            requestDigest: UInt64 = 0,
            versionCeiling: UInt64 = 0
        ) {
            self.sequence = sequence
            self.method = method
            self.idempotencyKey = idempotencyKey
            self.payload = payload
            self.appliedAtUnixMs = appliedAtUnixMs
            self.response = response
            self.requestDigest = requestDigest
            self.versionCeiling = versionCeiling
        }
    }

    /// A snapshot file holds a sequence of framed SnapshotSection messages: one header first, then
    /// layers, icons, marker chunks and idempotency keys in any order, then one footer.
    public struct SnapshotSection: ProtoMessage {
        /// The proto oneof `section`.
        public enum Section: Sendable, Equatable {
            /// Proto field `header` = 1.
            case header(SnapshotHeader)
            /// A layer as created (layer_id + options).
            /// Proto field `layer` = 2.
            case layer(CreateLayerRequest)
            /// A registered icon, with its PNG bytes.
            /// Proto field `icon` = 3.
            case icon(RegisterIconRequest)
            /// A chunk of one layer's markers (full state, defaults filled in).
            /// Proto field `markers` = 4.
            case markers(UpsertMarkersRequest)
            /// One key per section: written by markerd before idempotency_keys (still read).
            /// Proto field `idempotency` = 5.
            case idempotency(IdempotencyEntry)
            /// Proto field `footer` = 6.
            case footer(SnapshotFooter)
            /// Many keys per section, packed.
            /// Proto field `idempotency_keys` = 7.
            case idempotencyKeys(IdempotencyKeys)
        }

        /// One of the `section` cases; nil when none is set.
        public var section: Section? = nil

        public init() {}

        public init(
            section: Section? = nil
        ) {
            self.section = section
        }
    }

    /// The proto message `SnapshotHeader`.
    public struct SnapshotHeader: ProtoMessage {
        /// Proto field `format_version` = 1.
        public var formatVersion: UInt32? = nil
        /// Journal records with a sequence above this are not covered and must be replayed.
        /// Proto field `covers_sequence` = 2.
        public var coversSequence: UInt64? = nil
        /// Proto field `created_at_unix_ms` = 3.
        public var createdAtUnixMs: Int64? = nil
        /// The highest version reservation made before the snapshot was written (see
        /// JournalRecord.version_ceiling); absent in snapshots of markerd before it had them.
        /// Proto field `version_ceiling` = 4.
        public var versionCeiling: UInt64? = nil

        public init() {}

        public init(
            formatVersion: UInt32? = nil,
            coversSequence: UInt64? = nil,
            createdAtUnixMs: Int64? = nil,
            versionCeiling: UInt64? = nil
        ) {
            self.formatVersion = formatVersion
            self.coversSequence = coversSequence
            self.createdAtUnixMs = createdAtUnixMs
            self.versionCeiling = versionCeiling
        }
    }

    /// The proto message `SnapshotFooter`.
    public struct SnapshotFooter: ProtoMessage {
        /// Proto field `layers` = 1.
        public var layers: UInt64? = nil
        /// Proto field `markers` = 2.
        public var markers: UInt64? = nil

        public init() {}

        public init(
            layers: UInt64? = nil,
            markers: UInt64? = nil
        ) {
            self.layers = layers
            self.markers = markers
        }
    }

    /// A recent mutation's reply, kept so that a resent request after a restart applies nothing.
    /// Older snapshots hold one per key; markerd now writes IdempotencyKeys.
    public struct IdempotencyEntry: ProtoMessage {
        /// Proto field `key` = 1.
        public var key: String? = nil
        /// Proto field `request_digest` = 2.
        public var requestDigest: UInt64? = nil
        /// The serialized Response envelope that was sent.
        /// Proto field `response` = 3.
        public var response: [UInt8]? = nil
        /// Proto field `at_unix_ms` = 4.
        public var atUnixMs: Int64? = nil

        public init() {}

        public init(
            key: String? = nil,
            requestDigest: UInt64? = nil,
            response: [UInt8]? = nil,
            atUnixMs: Int64? = nil
        ) {
            self.key = key
            self.requestDigest = requestDigest
            self.response = response
            self.atUnixMs = atUnixMs
        }
    }

    /// Recent mutations' replies, oldest first, kept so that a resent request after a restart
    /// applies nothing (see IdempotencyStore.packed in Sources/MarkerdService).
    public struct IdempotencyKeys: ProtoMessage {
        /// Per key, back to back: request digest (8 bytes, little-endian), applied at (Unix ms) minus
        /// the previous key's (0 for the first) as a zigzag varint, length n as a varint, then n bytes:
        /// the stored key (a tag byte: 1-128 = the key's length, followed by the key; 129-192 = 128 +
        /// the length of the bytes that the key's lowercase hex digits spell, followed by them), then
        /// the OK reply's payload.
        /// Proto field `packed` = 1; absent decodes to [], which is not encoded.
        public var packed: [UInt8] = []

        public init() {}

        public init(
            packed: [UInt8] = []
        ) {
            self.packed = packed
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.JournalRecord: CBridged {
    static var protoName: String { "JournalRecord" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__journal_record__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__JournalRecord.self)
        self.init(
            sequence: c.sequence,
            method: try swiftString(c.method, "JournalRecord.method"),
            idempotencyKey: try swiftString(c.idempotency_key, "JournalRecord.idempotency_key"),
            payload: swiftBytes(c.payload.data, c.payload.len),
            appliedAtUnixMs: c.applied_at_unix_ms,
            response: swiftBytes(c.response.data, c.response.len),
            requestDigest: c.request_digest,
            versionCeiling: c.version_ceiling
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__JournalRecord()
        markerd__v1__journal_record__init(&c)
        setPlain(self.sequence, &c.has_sequence, &c.sequence)
        c.method = arena.cString(self.method)
        c.idempotency_key = arena.cString(self.idempotencyKey)
        if !self.payload.isEmpty {
            c.has_payload = 1
            c.payload = ProtobufCBinaryData(len: self.payload.count, data: arena.bytes(self.payload))
        }
        setPlain(self.appliedAtUnixMs, &c.has_applied_at_unix_ms, &c.applied_at_unix_ms)
        if !self.response.isEmpty {
            c.has_response = 1
            c.response = ProtobufCBinaryData(len: self.response.count, data: arena.bytes(self.response))
        }
        setPlain(self.requestDigest, &c.has_request_digest, &c.request_digest)
        setPlain(self.versionCeiling, &c.has_version_ceiling, &c.version_ceiling)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.SnapshotSection: CBridged {
    static var protoName: String { "SnapshotSection" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__snapshot_section__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__SnapshotSection.self)
        var section: Section? = nil
        switch c.section_case {
        case MARKERD__V1__SNAPSHOT_SECTION__SECTION_HEADER:
            if let value: V1.SnapshotHeader = try swiftMessage(c.header) { section = .header(value) }
        case MARKERD__V1__SNAPSHOT_SECTION__SECTION_LAYER:
            if let value: V1.CreateLayerRequest = try swiftMessage(c.layer) { section = .layer(value) }
        case MARKERD__V1__SNAPSHOT_SECTION__SECTION_ICON:
            if let value: V1.RegisterIconRequest = try swiftMessage(c.icon) { section = .icon(value) }
        case MARKERD__V1__SNAPSHOT_SECTION__SECTION_MARKERS:
            if let value: V1.UpsertMarkersRequest = try swiftMessage(c.markers) { section = .markers(value) }
        case MARKERD__V1__SNAPSHOT_SECTION__SECTION_IDEMPOTENCY:
            if let value: V1.IdempotencyEntry = try swiftMessage(c.idempotency) { section = .idempotency(value) }
        case MARKERD__V1__SNAPSHOT_SECTION__SECTION_FOOTER:
            if let value: V1.SnapshotFooter = try swiftMessage(c.footer) { section = .footer(value) }
        case MARKERD__V1__SNAPSHOT_SECTION__SECTION_IDEMPOTENCY_KEYS:
            if let value: V1.IdempotencyKeys = try swiftMessage(c.idempotency_keys) { section = .idempotencyKeys(value) }
        default:
            break
        }
        self.init(
            section: section
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__SnapshotSection()
        markerd__v1__snapshot_section__init(&c)
        switch self.section {
        case .header(let value)?:
            c.section_case = MARKERD__V1__SNAPSHOT_SECTION__SECTION_HEADER
            c.header = arena.message(value)
        case .layer(let value)?:
            c.section_case = MARKERD__V1__SNAPSHOT_SECTION__SECTION_LAYER
            c.layer = arena.message(value)
        case .icon(let value)?:
            c.section_case = MARKERD__V1__SNAPSHOT_SECTION__SECTION_ICON
            c.icon = arena.message(value)
        case .markers(let value)?:
            c.section_case = MARKERD__V1__SNAPSHOT_SECTION__SECTION_MARKERS
            c.markers = arena.message(value)
        case .idempotency(let value)?:
            c.section_case = MARKERD__V1__SNAPSHOT_SECTION__SECTION_IDEMPOTENCY
            c.idempotency = arena.message(value)
        case .footer(let value)?:
            c.section_case = MARKERD__V1__SNAPSHOT_SECTION__SECTION_FOOTER
            c.footer = arena.message(value)
        case .idempotencyKeys(let value)?:
            c.section_case = MARKERD__V1__SNAPSHOT_SECTION__SECTION_IDEMPOTENCY_KEYS
            c.idempotency_keys = arena.message(value)
        case nil:
            break
        }
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.SnapshotHeader: CBridged {
    static var protoName: String { "SnapshotHeader" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__snapshot_header__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__SnapshotHeader.self)
        self.init(
            formatVersion: present(c.has_format_version, c.format_version),
            coversSequence: present(c.has_covers_sequence, c.covers_sequence),
            createdAtUnixMs: present(c.has_created_at_unix_ms, c.created_at_unix_ms),
            versionCeiling: present(c.has_version_ceiling, c.version_ceiling)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__SnapshotHeader()
        markerd__v1__snapshot_header__init(&c)
        setOptional(self.formatVersion, &c.has_format_version, &c.format_version)
        setOptional(self.coversSequence, &c.has_covers_sequence, &c.covers_sequence)
        setOptional(self.createdAtUnixMs, &c.has_created_at_unix_ms, &c.created_at_unix_ms)
        setOptional(self.versionCeiling, &c.has_version_ceiling, &c.version_ceiling)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.SnapshotFooter: CBridged {
    static var protoName: String { "SnapshotFooter" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__snapshot_footer__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__SnapshotFooter.self)
        self.init(
            layers: present(c.has_layers, c.layers),
            markers: present(c.has_markers, c.markers)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__SnapshotFooter()
        markerd__v1__snapshot_footer__init(&c)
        setOptional(self.layers, &c.has_layers, &c.layers)
        setOptional(self.markers, &c.has_markers, &c.markers)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.IdempotencyEntry: CBridged {
    static var protoName: String { "IdempotencyEntry" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__idempotency_entry__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__IdempotencyEntry.self)
        self.init(
            key: try swiftOptionalString(c.key, "IdempotencyEntry.key"),
            requestDigest: present(c.has_request_digest, c.request_digest),
            response: c.has_response != 0 ? swiftBytes(c.response.data, c.response.len) : nil,
            atUnixMs: present(c.has_at_unix_ms, c.at_unix_ms)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__IdempotencyEntry()
        markerd__v1__idempotency_entry__init(&c)
        c.key = arena.cString(self.key)
        setOptional(self.requestDigest, &c.has_request_digest, &c.request_digest)
        if let response = self.response {
            c.has_response = 1
            c.response = ProtobufCBinaryData(len: response.count, data: arena.bytes(response))
        }
        setOptional(self.atUnixMs, &c.has_at_unix_ms, &c.at_unix_ms)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.IdempotencyKeys: CBridged {
    static var protoName: String { "IdempotencyKeys" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__idempotency_keys__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__IdempotencyKeys.self)
        self.init(
            packed: swiftBytes(c.packed.data, c.packed.len)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__IdempotencyKeys()
        markerd__v1__idempotency_keys__init(&c)
        if !self.packed.isEmpty {
            c.has_packed = 1
            c.packed = ProtobufCBinaryData(len: self.packed.count, data: arena.bytes(self.packed))
        }
        return UnsafeMutableRawPointer(arena.store(c))
    }
}
