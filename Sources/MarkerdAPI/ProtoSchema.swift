// The API's schema as data: every rpc of `service MarkerService` with its request message, and
// every message's fields, read from the descriptors protobuf-c generated from Protos/. For tools
// that must cover every method and every field without a list of their own that could fall behind
// the .proto (the structure-aware fuzz test, for one).
private import CMarkerdProto
private import CProtobufC

/// The schema of `markerd.v1`'s messages and of `service MarkerService`, as protobuf-c describes them.
public enum ProtoSchema {
    /// A field's wire-level type.
    public enum FieldType: Sendable, Equatable {
        case int32, sint32, sfixed32, int64, sint64, sfixed64
        case uint32, fixed32, uint64, fixed64
        case float, double, bool, string, bytes
        /// An enum, with its defined values (a decoder may meet others).
        case enumeration(values: [Int32])
        /// A nested message (described lazily: messages may be recursive).
        case message(Message)
    }

    /// One field of a message.
    public struct Field: Sendable {
        public let name: String
        public let number: UInt32
        public let isRepeated: Bool
        public let type: FieldType
    }

    /// A message type; `fields` are read from its descriptor on each call.
    public struct Message: Sendable, Equatable {
        /// The full protobuf name, e.g. "markerd.v1.GetClustersRequest".
        public let name: String
        /// The address of its protobuf-c descriptor (static, generated data).
        private let descriptor: UInt

        fileprivate init(_ d: UnsafePointer<ProtobufCMessageDescriptor>) {
            descriptor = UInt(bitPattern: d)
            name = String(cString: d.pointee.name)
        }

        public static func == (a: Message, b: Message) -> Bool { a.descriptor == b.descriptor }

        public var fields: [Field] {
            let d = UnsafePointer<ProtobufCMessageDescriptor>(bitPattern: descriptor)!.pointee
            return (0..<Int(d.n_fields)).map { i in
                let f = d.fields[i]
                return Field(name: String(cString: f.name), number: f.id,
                             isRepeated: f.label == PROTOBUF_C_LABEL_REPEATED, type: ProtoSchema.type(of: f))
            }
        }
    }

    /// One rpc: its name (e.g. "GetClusters") and request message.
    public struct Method: Sendable {
        public let name: String
        public let request: Message
        /// The envelope's `method` string: "/markerd.v1.MarkerService/" + name.
        public var path: String { "/markerd.v1.MarkerService/" + name }
        /// Whether the request names a layer: field 1 is `string layer_id` (the server's access
        /// checks and cluster redirects, the client's layer -> endpoint cache).
        public var namesLayer: Bool {
            let first = request.fields.first { $0.number == 1 }
            return first?.name == "layer_id" && first?.type == .string
        }
    }

    /// The envelope `method` strings of the rpcs whose request names a layer (``Method/namesLayer``).
    public static let layerMethodPaths: Set<String> = Set(methods.filter(\.namesLayer).map(\.path))

    /// Every rpc of `service MarkerService`, in .proto order.
    public static var methods: [Method] {
        let s = markerd__v1__marker_service__descriptor
        return (0..<Int(s.n_methods)).map { i in
            Method(name: String(cString: s.methods[i].name), request: Message(s.methods[i].input))
        }
    }

    private static func type(of f: ProtobufCFieldDescriptor) -> FieldType {
        switch f.type {
        case PROTOBUF_C_TYPE_INT32: return .int32
        case PROTOBUF_C_TYPE_SINT32: return .sint32
        case PROTOBUF_C_TYPE_SFIXED32: return .sfixed32
        case PROTOBUF_C_TYPE_INT64: return .int64
        case PROTOBUF_C_TYPE_SINT64: return .sint64
        case PROTOBUF_C_TYPE_SFIXED64: return .sfixed64
        case PROTOBUF_C_TYPE_UINT32: return .uint32
        case PROTOBUF_C_TYPE_FIXED32: return .fixed32
        case PROTOBUF_C_TYPE_UINT64: return .uint64
        case PROTOBUF_C_TYPE_FIXED64: return .fixed64
        case PROTOBUF_C_TYPE_FLOAT: return .float
        case PROTOBUF_C_TYPE_DOUBLE: return .double
        case PROTOBUF_C_TYPE_BOOL: return .bool
        case PROTOBUF_C_TYPE_STRING: return .string
        case PROTOBUF_C_TYPE_BYTES: return .bytes
        case PROTOBUF_C_TYPE_ENUM:
            let e = f.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self).pointee
            return .enumeration(values: (0..<Int(e.n_values)).map { e.values[$0].value })
        default:  // PROTOBUF_C_TYPE_MESSAGE
            return .message(Message(f.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)))
        }
    }
}
