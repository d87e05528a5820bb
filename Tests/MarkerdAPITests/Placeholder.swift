import Testing

@Test func placeholderMarkerdAPITests() { #expect(Bool(true)) }
