import Testing

@Test func placeholderMarkerdServiceTests() { #expect(Bool(true)) }
