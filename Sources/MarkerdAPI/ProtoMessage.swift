/// The markerd API, version 1 (`package markerd.v1` in `Protos/markerd/v1/*.proto`).
///
/// Every protobuf message and enum is a nested value type: `V1.Request`, `V1.Marker`, `V1.Code`, ...
/// Messages are encoded and decoded with protobuf-c; no C type appears in this module's public API.
///
/// Field conventions (the protos are proto2 only so that protobuf-c 1.4 keeps presence):
/// - Singular message fields, fields with a proto `[default = ...]`, and every field of `DefaultPin`,
///   `TilingOptions`, `ClusteringOptions`, `SnapshotHeader`, `SnapshotFooter` and `IdempotencyEntry`
///   are Swift optionals: `nil` means absent and is not encoded.
/// - Every other singular scalar, string, bytes or enum field is a plain value, proto3-like: absent
///   decodes to the zero value and the zero value is not encoded.
/// - `map<string, string>` is `[String: String]`, encoded with keys in ascending byte order, so
///   encoding is deterministic.
/// - Strings must be valid UTF-8: decoding rejects invalid UTF-8 in any string field with a
///   `ProtoDecodingError` (reason `.invalidUTF8`), so the server can answer INVALID_ARGUMENT.
/// - protobuf-c keeps strings NUL-terminated: a string that contains U+0000 is cut at the first NUL
///   when encoded, and a string on the wire with an embedded NUL decodes up to that NUL.
/// - Unknown fields are skipped when decoding and are not re-encoded. Unknown enum numbers decode to
///   a fallback case (`Code.unknown`, `TilingMode.unspecified`, `AnimationKind.unspecified`).
public enum V1 {}

/// A protobuf message of the markerd API.
public protocol ProtoMessage: Sendable, Equatable {
    /// The message with every field absent (or zero).
    init()
    /// Decodes one message; throws on malformed input (never crashes, whatever the bytes).
    init(serializedBytes: UnsafeRawBufferPointer) throws(ProtoDecodingError)
    /// Exact encoded size in bytes.
    var serializedSize: Int { get }
    /// Writes exactly `serializedSize` bytes into `buffer` (which has at least that many).
    func serialize(into buffer: UnsafeMutableRawBufferPointer)
}

extension ProtoMessage {
    /// Decodes one message from `bytes`; throws on malformed input.
    public init(serializedBytes bytes: [UInt8]) throws(ProtoDecodingError) {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(ProtoDecodingError) -> Self in try Self(serializedBytes: raw) }
        }
        self = try result.get()
    }

    /// The encoded message (exactly `serializedSize` bytes).
    public func serializedBytes() -> [UInt8] {
        if let bridged = self as? any CBridged {
            return bridged.encodedBytes()  // builds the C message once for both size and pack
        }
        let size = serializedSize
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            serialize(into: UnsafeMutableRawBufferPointer(buffer))
            count = size
        }
    }
}

/// Why a message could not be decoded.
public struct ProtoDecodingError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Reason: Sendable, Equatable {
        /// protobuf-c rejected the bytes: truncated, bad tag, wrong wire type, bad length, ...
        case malformed
        /// A string field (named "Message.field") is not valid UTF-8.
        case invalidUTF8(field: String)
    }

    /// The proto name of the message being decoded, e.g. "UpsertMarkersRequest".
    public var messageName: String
    /// Size of the input in bytes.
    public var byteCount: Int
    public var reason: Reason

    public init(messageName: String, byteCount: Int, reason: Reason) {
        self.messageName = messageName
        self.byteCount = byteCount
        self.reason = reason
    }

    /// e.g. "malformed UpsertMarkersRequest (147 bytes)" or
    /// "invalid UTF-8 in Marker.id while decoding UpsertMarkersRequest (147 bytes)".
    public var description: String {
        switch reason {
        case .malformed:
            "malformed \(messageName) (\(byteCount) bytes)"
        case .invalidUTF8(let field):
            "invalid UTF-8 in \(field) while decoding \(messageName) (\(byteCount) bytes)"
        }
    }
}
