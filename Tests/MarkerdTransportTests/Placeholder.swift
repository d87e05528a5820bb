import Testing

@Test func placeholderMarkerdTransportTests() { #expect(Bool(true)) }
