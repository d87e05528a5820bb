/// Reading one attribute of a stored marker without decoding the others.
extension MarkerLayer {
    /// The value of attribute `key` of the marker in `slot` (an occupied slot), or nil when it
    /// has no such attribute. Reads the slot's encoded attributes (`AttributeEncoding`, sorted by
    /// key) up to `key` and decodes only its value: O(bytes before it), no dictionary.
    public func attributeValue(_ key: String, slot: Int32) -> String? {
        attributes.withBytes(slot) { AttributeEncoding.value(key, in: $0) }
    }

    /// Calls `body` with the slot's encoded attributes (`AttributeEncoding`'s canonical bytes,
    /// exactly the `Marker.attributes` field as the API encodes it; empty: none), valid only
    /// inside `body`: for encoders that copy them into a reply as they are.
    public func withEncodedAttributes<R>(_ slot: MarkerSlot, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        attributes.withBytes(slot.raw, body)
    }
}
