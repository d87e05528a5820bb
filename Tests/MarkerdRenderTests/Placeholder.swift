import Testing

@Test func placeholderMarkerdRenderTests() { #expect(Bool(true)) }
