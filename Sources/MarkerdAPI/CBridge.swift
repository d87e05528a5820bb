// The bridge between the Swift message types and protobuf-c: an arena (bump) allocator used both
// by protobuf-c's unpack and for building C messages to pack, plus small generic field helpers.
// Only raw pointers and Swift types cross file boundaries; each V1+*.swift file binds its own C types.
private import CProtobufC
import Synchronization

// MARK: - Arena

/// Header of one arena chunk; the chunk's usable memory follows it.
private struct ArenaChunk {
    var previous: UnsafeMutableRawPointer?
    var size: Int
}

struct ArenaState {
    var cursor: UnsafeMutableRawPointer
    var end: UnsafeMutableRawPointer
    var chunks: UnsafeMutableRawPointer?
    var nextChunkSize: Int
}

/// A bump allocator: allocation is a pointer increment, nothing is freed until `release()`.
/// Not thread-safe; one arena per decode or encode call.
struct Arena {
    let state: UnsafeMutablePointer<ArenaState>

    /// `capacity`: the size of the first chunk, in bytes (later chunks double).
    init(capacity: Int) {
        state = .allocate(capacity: 1)
        let none = UnsafeMutableRawPointer(bitPattern: 16)!
        state.initialize(to: ArenaState(cursor: none, end: none, chunks: nil, nextChunkSize: max(capacity, 1024)))
        if let spare = Arena.takeSpareChunk(atLeast: capacity) {
            adopt(spare)
        }
    }

    /// Frees every chunk (keeping the largest one as the spare). The arena must not be used afterwards.
    func release() {
        var chunk = state.pointee.chunks
        var largest: UnsafeMutableRawPointer?
        while let c = chunk {
            chunk = c.load(as: ArenaChunk.self).previous
            if let l = largest, l.load(as: ArenaChunk.self).size >= c.load(as: ArenaChunk.self).size {
                c.deallocate()
            } else {
                largest?.deallocate()
                largest = c
            }
        }
        if let largest { Arena.offerSpareChunk(largest) }
        state.deallocate()
    }

    // One spare chunk, shared by all threads, so that decoding a large message after another one
    // reuses memory that is already mapped instead of page-faulting in tens of megabytes again.
    private static let spare = Atomic<UInt>(0)
    private static let smallChunk = 64 << 10
    private static let largestSpare = 64 << 20

    private static func takeSpareChunk(atLeast size: Int) -> UnsafeMutableRawPointer? {
        guard let chunk = UnsafeMutableRawPointer(bitPattern: spare.exchange(0, ordering: .acquiring)) else { return nil }
        if chunk.load(as: ArenaChunk.self).size >= size &+ chunkHeader { return chunk }
        chunk.deallocate()  // too small for this message: let a fresh, larger one become the spare later
        return nil
    }

    private static func offerSpareChunk(_ chunk: UnsafeMutableRawPointer) {
        let size = chunk.load(as: ArenaChunk.self).size
        guard size > smallChunk, size <= largestSpare else { return chunk.deallocate() }
        let old = spare.exchange(UInt(bitPattern: chunk), ordering: .acquiringAndReleasing)
        UnsafeMutableRawPointer(bitPattern: old)?.deallocate()  // the newest spare wins
    }

    private static let chunkHeader = 16  // MemoryLayout<ArenaChunk>.size rounded up to the maximum alignment

    /// Makes `chunk` (with a valid header) the current chunk.
    private func adopt(_ chunk: UnsafeMutableRawPointer) {
        let size = chunk.load(as: ArenaChunk.self).size
        chunk.storeBytes(of: ArenaChunk(previous: state.pointee.chunks, size: size), as: ArenaChunk.self)
        state.pointee.chunks = chunk
        state.pointee.cursor = chunk + Arena.chunkHeader
        state.pointee.end = chunk + size
    }

    /// `size` bytes aligned to `alignment` (a power of two, at most 16).
    @inline(__always)
    func allocate(_ size: Int, alignment: Int = 16) -> UnsafeMutableRawPointer {
        let mask = UInt(alignment &- 1)
        let start = (UInt(bitPattern: state.pointee.cursor) &+ mask) & ~mask
        let newCursor = start &+ UInt(size)
        if newCursor <= UInt(bitPattern: state.pointee.end) {
            let p = UnsafeMutableRawPointer(bitPattern: start)!
            state.pointee.cursor = UnsafeMutableRawPointer(bitPattern: newCursor)!
            return p
        }
        return allocateChunk(size)
    }

    @inline(never)
    private func allocateChunk(_ size: Int) -> UnsafeMutableRawPointer {
        let chunkSize = max(state.pointee.nextChunkSize, size &+ Arena.chunkHeader)
        state.pointee.nextChunkSize = min(chunkSize * 2, 1 << 30)
        let chunk = UnsafeMutableRawPointer.allocate(byteCount: chunkSize, alignment: 16)
        chunk.storeBytes(of: ArenaChunk(previous: nil, size: chunkSize), as: ArenaChunk.self)
        adopt(chunk)
        let p = state.pointee.cursor
        state.pointee.cursor = p + size
        return p
    }

    /// Stores `value` in the arena (C structs: trivial types only).
    @inline(__always)
    func store<T>(_ value: T) -> UnsafeMutablePointer<T> {
        let p = allocate(MemoryLayout<T>.size, alignment: MemoryLayout<T>.alignment)
        return p.initializeMemory(as: T.self, to: value)
    }

    // MARK: Encoding helpers (Swift value -> C field)

    /// A NUL-terminated copy of `string`, or nil when it is empty (plain string fields: not encoded).
    @inline(__always)
    func cString(_ string: String) -> UnsafeMutablePointer<CChar>? {
        string.isEmpty ? nil : cString(present: string)
    }

    /// A NUL-terminated copy of `string`, or nil when it is nil (optional string fields).
    @inline(__always)
    func cString(_ string: String?) -> UnsafeMutablePointer<CChar>? {
        string.map { cString(present: $0) }
    }

    func cString(present string: String) -> UnsafeMutablePointer<CChar> {
        var string = string
        return string.withUTF8 { utf8 in
            let p = allocate(utf8.count &+ 1, alignment: 1)
            if let base = utf8.baseAddress { p.copyMemory(from: base, byteCount: utf8.count) }
            p.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
            return p.assumingMemoryBound(to: CChar.self)
        }
    }

    /// A copy of `bytes` (a valid pointer even when empty).
    func bytes(_ bytes: [UInt8]) -> UnsafeMutablePointer<UInt8> {
        let p = allocate(bytes.count, alignment: 1)
        bytes.withUnsafeBytes { if let base = $0.baseAddress { p.copyMemory(from: base, byteCount: $0.count) } }
        return p.assumingMemoryBound(to: UInt8.self)
    }

    /// The C message of `message` (nil when absent). `P` is the C struct type.
    @inline(__always)
    func message<M: CBridged, P>(_ message: M?) -> UnsafeMutablePointer<P>? {
        guard let message else { return nil }
        return message.cMessage(in: self).assumingMemoryBound(to: P.self)
    }

    /// A C array of pointers to the C messages of `messages` (count, pointer).
    func messages<M: CBridged, P>(_ messages: [M]) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<P>?>?) {
        if messages.isEmpty { return (0, nil) }
        let array = allocate(messages.count &* MemoryLayout<UnsafeMutableRawPointer>.stride, alignment: 8)
            .bindMemory(to: UnsafeMutablePointer<P>?.self, capacity: messages.count)
        messages.withUnsafeBufferPointer { messages in  // no per-element copy (retain/release)
            for i in messages.indices {
                array[i] = messages[i].cMessage(in: self).assumingMemoryBound(to: P.self)
            }
        }
        return (messages.count, array)
    }

    /// A C array of enum values (count, pointer).
    func enums<E: ProtoEnum, C: RawRepresentable>(_ values: [E]) -> (Int, UnsafeMutablePointer<C>?) where C.RawValue: BinaryInteger {
        if values.isEmpty { return (0, nil) }
        let array = allocate(values.count &* MemoryLayout<C>.stride, alignment: MemoryLayout<C>.alignment)
            .bindMemory(to: C.self, capacity: values.count)
        for (i, v) in values.enumerated() { (array + i).initialize(to: v.cEnum()) }
        return (values.count, array)
    }

    /// A C array of NUL-terminated strings (count, pointer).
    func strings(_ strings: [String]) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) {
        if strings.isEmpty { return (0, nil) }
        let array = allocate(strings.count &* MemoryLayout<UnsafeMutableRawPointer>.stride, alignment: 8)
            .bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: strings.count)
        for (i, s) in strings.enumerated() { array[i] = cString(present: s) }
        return (strings.count, array)
    }
}

// protobuf-c allocator callbacks over an Arena (allocator_data is the ArenaState pointer).
private func arenaAlloc(_ data: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
    Arena(state: data.unsafelyUnwrapped.assumingMemoryBound(to: ArenaState.self)).allocate(size)
}
private func arenaFree(_ data: UnsafeMutableRawPointer?, _ pointer: UnsafeMutableRawPointer?) {}

extension Arena {
    init(state: UnsafeMutablePointer<ArenaState>) { self.state = state }
}

// MARK: - The bridged message protocol

/// Thrown while converting an unpacked C message; turned into a `ProtoDecodingError` at the top.
struct InvalidUTF8: Error {
    /// "Message.field"
    let field: StaticString
}

/// A message type backed by a protobuf-c message. The C pointers are untyped here; each
/// conforming type binds them to its own generated C struct.
protocol CBridged: ProtoMessage {
    /// The proto message name, e.g. "UpsertMarkersRequest".
    static var protoName: String { get }
    /// protobuf-c's `<message>__unpack` with `allocator` (a `ProtobufCAllocator *`); nil on bad input.
    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer?
    /// Converts an unpacked C message.
    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8)
    /// Builds the C message in `arena` (valid until the arena is released).
    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer
}

extension CBridged {
    public init(serializedBytes bytes: UnsafeRawBufferPointer) throws(ProtoDecodingError) {
        // protobuf-c's unpacked structs take up to ~7x the wire bytes (100k small markers: ~6.5x).
        let arena = Arena(capacity: 1024 &+ bytes.count &* 8)
        defer { arena.release() }
        var allocator = ProtobufCAllocator(alloc: arenaAlloc, free: arenaFree, allocator_data: UnsafeMutableRawPointer(arena.state))
        let unpacked = withUnsafeMutablePointer(to: &allocator) { allocator in
            Self.cUnpack(allocator: UnsafeMutableRawPointer(allocator), bytes: bytes)
        }
        guard let unpacked else {
            throw ProtoDecodingError(messageName: Self.protoName, byteCount: bytes.count, reason: .malformed)
        }
        do {
            try self.init(cMessage: unpacked)
        } catch {
            throw ProtoDecodingError(messageName: Self.protoName, byteCount: bytes.count,
                                     reason: .invalidUTF8(field: error.field.description))
        }
    }

    public var serializedSize: Int {
        let arena = Arena(capacity: 4096)
        defer { arena.release() }
        return protobuf_c_message_get_packed_size(cMessage(in: arena).assumingMemoryBound(to: ProtobufCMessage.self))
    }

    public func serialize(into buffer: UnsafeMutableRawBufferPointer) {
        let arena = Arena(capacity: 4096)
        defer { arena.release() }
        let message = cMessage(in: arena).assumingMemoryBound(to: ProtobufCMessage.self)
        let size = protobuf_c_message_get_packed_size(message)
        precondition(buffer.count >= size, "serialize(into:) needs \(size) bytes, got \(buffer.count)")
        if size == 0 { return }
        let written = protobuf_c_message_pack(message, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
        assert(written == size)
    }

    /// Encodes with one C build for both the size and the bytes.
    func encodedBytes() -> [UInt8] {
        let arena = Arena(capacity: 4096)
        defer { arena.release() }
        let message = cMessage(in: arena).assumingMemoryBound(to: ProtobufCMessage.self)
        let size = protobuf_c_message_get_packed_size(message)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            if size > 0 { _ = protobuf_c_message_pack(message, buffer.baseAddress!) }
            count = size
        }
    }
}

extension UnsafeRawBufferPointer {
    /// The base address as `const uint8_t *` (a valid dummy address when empty).
    var cBytes: UnsafePointer<UInt8> {
        (baseAddress ?? UnsafeRawPointer(bitPattern: 16)!).assumingMemoryBound(to: UInt8.self)
    }
}

// MARK: - Decoding helpers (C field -> Swift value)

/// A plain string field: NULL (absent) decodes to "".
@inline(__always)
func swiftString(_ p: UnsafePointer<CChar>?, _ field: StaticString) throws(InvalidUTF8) -> String {
    guard let p else { return "" }
    guard let s = String(validatingCString: p) else { throw InvalidUTF8(field: field) }
    return s
}

/// An optional string field: NULL (absent) decodes to nil.
@inline(__always)
func swiftOptionalString(_ p: UnsafePointer<CChar>?, _ field: StaticString) throws(InvalidUTF8) -> String? {
    guard let p else { return nil }
    guard let s = String(validatingCString: p) else { throw InvalidUTF8(field: field) }
    return s
}

/// A repeated string field.
func swiftStrings(_ count: Int, _ items: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                  _ field: StaticString) throws(InvalidUTF8) -> [String] {
    guard count > 0, let items else { return [] }
    var result: [String] = []
    result.reserveCapacity(count)
    for i in 0..<count { result.append(try swiftString(items[i], field)) }
    return result
}

/// A bytes field.
@inline(__always)
func swiftBytes(_ data: UnsafeMutablePointer<UInt8>?, _ count: Int) -> [UInt8] {
    guard count > 0, let data else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: count))
}

/// A singular message field: NULL (absent) decodes to nil.
@inline(__always)
func swiftMessage<M: CBridged, P>(_ p: UnsafeMutablePointer<P>?) throws(InvalidUTF8) -> M? {
    guard let p else { return nil }
    return try M(cMessage: UnsafeRawPointer(p))
}

/// A repeated message field.
func swiftMessages<M: CBridged, P>(_ count: Int, _ items: UnsafeMutablePointer<UnsafeMutablePointer<P>?>?) throws(InvalidUTF8) -> [M] {
    guard count > 0, let items else { return [] }
    var failure: InvalidUTF8?
    let result = [M](unsafeUninitializedCapacity: count) { buffer, initialized in
        initialized = 0
        for i in 0..<count {
            do {
                (buffer.baseAddress.unsafelyUnwrapped + i).initialize(to: try M(cMessage: UnsafeRawPointer(items[i].unsafelyUnwrapped)))
            } catch {
                failure = (error as! InvalidUTF8)
                return
            }
            initialized = i &+ 1
        }
    }
    if let failure { throw failure }
    return result
}

/// An optional scalar: `has` is protobuf-c's `has_<field>`.
@inline(__always)
func present<T>(_ has: Int32, _ value: T) -> T? { has != 0 ? value : nil }

/// An optional bool.
@inline(__always)
func present(_ has: Int32, _ value: Int32) -> Bool? { has != 0 ? value != 0 : nil }

// MARK: - Scalar encoding helpers (Swift value -> has_ flag + C field)

/// A plain scalar: encoded unless zero.
@inline(__always)
func setPlain<T: Numeric>(_ value: T, _ has: inout Int32, _ field: inout T) {
    if value != .zero { has = 1; field = value }
}

/// A plain bool: encoded unless false.
@inline(__always)
func setPlain(_ value: Bool, _ has: inout Int32, _ field: inout Int32) {
    if value { has = 1; field = 1 }
}

/// An optional scalar: encoded when present.
@inline(__always)
func setOptional<T>(_ value: T?, _ has: inout Int32, _ field: inout T) {
    if let value { has = 1; field = value }
}

/// An optional bool: encoded when present.
@inline(__always)
func setOptional(_ value: Bool?, _ has: inout Int32, _ field: inout Int32) {
    if let value { has = 1; field = value ? 1 : 0 }
}

// MARK: - Enums

/// A proto enum: unknown numbers decode to `fallback`.
protocol ProtoEnum: RawRepresentable<Int32>, CaseIterable {
    static var fallback: Self { get }
}

extension ProtoEnum {
    /// The value of a C enum field (unknown numbers become `fallback`).
    @inline(__always)
    init<C: RawRepresentable>(cEnum: C) where C.RawValue: BinaryInteger {
        self = Self(rawValue: Int32(truncatingIfNeeded: cEnum.rawValue)) ?? Self.fallback
    }

    /// The C enum value.
    @inline(__always)
    func cEnum<C: RawRepresentable>() -> C where C.RawValue: BinaryInteger {
        C(rawValue: C.RawValue(truncatingIfNeeded: rawValue))!
    }
}

/// A plain enum: encoded unless it is the zero value.
@inline(__always)
func setPlain<E: ProtoEnum, C: RawRepresentable>(_ value: E, _ has: inout Int32, _ field: inout C) where C.RawValue: BinaryInteger {
    if value.rawValue != 0 { has = 1; field = value.cEnum() }
}

/// An optional enum: encoded when present.
@inline(__always)
func setOptional<E: ProtoEnum, C: RawRepresentable>(_ value: E?, _ has: inout Int32, _ field: inout C) where C.RawValue: BinaryInteger {
    if let value { has = 1; field = value.cEnum() }
}

@inline(__always)
func swiftEnum<E: ProtoEnum, C: RawRepresentable>(_ c: C) -> E where C.RawValue: BinaryInteger {
    E(cEnum: c)
}

/// A repeated enum field (unknown numbers become `fallback`).
func swiftEnums<E: ProtoEnum, C: RawRepresentable>(_ count: Int, _ items: UnsafeMutablePointer<C>?) -> [E] where C.RawValue: BinaryInteger {
    guard count > 0, let items else { return [] }
    return (0..<count).map { E(cEnum: items[$0]) }
}

@inline(__always)
func swiftOptionalEnum<E: ProtoEnum, C: RawRepresentable>(_ has: Int32, _ c: C) -> E? where C.RawValue: BinaryInteger {
    has != 0 ? E(cEnum: c) : nil
}
