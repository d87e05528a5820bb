import Testing

@Test func placeholderMarkerdJournalTests() { #expect(Bool(true)) }
