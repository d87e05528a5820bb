// The clustering algorithm as CreateLayer requests named it before `ClusteringOptions.algorithm`
// became an enum: a string ("grid", "supercluster") in field 6, now reserved. Journals and
// snapshots hold those requests' bytes, so recovery reads the old field to restore such layers as
// they were created.

extension V1.CreateLayerRequest {
    /// The algorithm name that `options.clustering` holds in the old string field 6 of a
    /// serialized `CreateLayerRequest` (a journaled CreateLayer's payload), or nil when it holds
    /// none. As in protobuf, the last occurrence wins.
    public static func legacyAlgorithmName(inRequest bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { lastString($0, 0..<$0.count, path: [2, 2, 6]) }
    }

    /// As `legacyAlgorithmName(inRequest:)`, for a serialized `SnapshotSection` holding a layer
    /// (field 2: the layer's `CreateLayerRequest`).
    public static func legacyAlgorithmName(inSnapshotSection bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { lastString($0, 0..<$0.count, path: [2, 2, 2, 6]) }
    }

    /// The last string at the field path `path` (length-delimited fields, nested messages first)
    /// within `range`; nil when there is none or the bytes are malformed.
    private static func lastString(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>, path: ArraySlice<UInt64>) -> String? {
        var reader = WireReader(raw, range)
        var found: String?
        while !reader.atEnd {
            guard let key = reader.key() else { return nil }
            switch key & 7 {
            case 2:
                guard let sub = reader.lengthDelimited() else { return nil }
                guard key >> 3 == path.first! else { continue }
                let value = path.count == 1 ? reader.string(sub) : lastString(raw, sub, path: path.dropFirst())
                if let value { found = value }
            default: guard reader.skipScalar(wireType: key & 7) else { return nil }
            }
        }
        return found
    }
}
