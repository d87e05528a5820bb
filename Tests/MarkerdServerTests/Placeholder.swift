import Testing

@Test func placeholderMarkerdServerTests() { #expect(Bool(true)) }
