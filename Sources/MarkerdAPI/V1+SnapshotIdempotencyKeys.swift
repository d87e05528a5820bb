extension V1.SnapshotSection {
    /// Where the packed keys are in a snapshot section holding `idempotency_keys` as markerd
    /// writes it (field 7, holding field 1 or nothing, and no other field), found without
    /// protobuf-c and without copying them: recovery reads megabytes of them. Returns nil for
    /// any other bytes (then decode with `init(serializedBytes:)`, which gives the same keys or
    /// the error). Never crashes, whatever the bytes.
    public static func packedIdempotencyKeys(_ bytes: UnsafeRawBufferPointer) -> Range<Int>? {
        var section = WireReader(bytes)
        guard section.key() == 7 << 3 | 2, let body = section.lengthDelimited(), section.atEnd else { return nil }
        var keys = WireReader(bytes, body)
        if keys.atEnd { return body }
        guard keys.key() == 1 << 3 | 2, let packed = keys.lengthDelimited(), keys.atEnd else { return nil }
        return packed
    }
}
