extension V1.SnapshotSection {
    /// Decodes a snapshot section holding a markers chunk (`SnapshotSection.markers`) straight
    /// into Swift values, without protobuf-c: restoring a snapshot decodes millions of markers
    /// and this is several times cheaper. It understands the plain subset markerd writes (each
    /// field at most once but `attributes`, no unknown fields, no `animation`, strings valid
    /// UTF-8 without NUL bytes, varints of at most 10 bytes) and returns nil for anything else,
    /// including malformed bytes: then decode with `init(serializedBytes:)`, which gives the same
    /// result or the error. Whenever it returns a request, that request equals what
    /// `init(serializedBytes:)` decodes. Never crashes, whatever the bytes.
    public static func decodeMarkersChunk(_ bytes: UnsafeRawBufferPointer) -> V1.UpsertMarkersRequest? {
        V1.UpsertMarkersRequest.collect { visitMarkersChunk(bytes, reserve: $0, each: $1) }
    }

    /// `decodeMarkersChunk` without building the request: calls `reserve` with the number of
    /// markers, then `each` with every marker in order (stop early by returning false), and
    /// returns the layer id. Returns nil when it declines the bytes (as `decodeMarkersChunk`
    /// does) or `each` stopped; `each` may have been called for some markers by then.
    /// `each`'s second argument is true when the marker's `icon` and `anchor` are encoded with
    /// the same bytes as the previous marker's (so they are equal: callers can reuse what they
    /// derived from them); false for the first marker. Attributes come as `visitPlain` gives
    /// them: their wire bytes in `each`'s third argument.
    public static func visitMarkersChunk(_ bytes: UnsafeRawBufferPointer, reserve: (Int) -> Void,
                                         each: (V1.Marker, _ sameStyle: Bool, _ attributes: UnsafeRawBufferPointer) -> Bool) -> String? {
        var r = WireReader(bytes)
        // The section: exactly field 4 (length-delimited) and nothing after it.
        guard r.key() == 4 << 3 | 2, let body = r.lengthDelimited(), r.atEnd else { return nil }
        return V1.UpsertMarkersRequest.visitPlain(bytes, body, reserve: reserve, each: each)
    }
}
