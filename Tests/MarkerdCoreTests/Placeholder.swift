import Testing

@Test func placeholderMarkerdCoreTests() { #expect(Bool(true)) }
