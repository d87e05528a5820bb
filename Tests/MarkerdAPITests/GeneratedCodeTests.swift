import Foundation
import Testing

/// The committed protobuf-c code in Sources/CMarkerdProto must be what scripts/gen-protos.sh
/// makes from Protos/ today: regenerate into a temporary folder and compare byte for byte.
@Test("generated protobuf-c code is fresh")
func generatedCodeIsFresh() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("markerd-gen-\(UInt64.random(in: 0...UInt64.max))")
    defer { try? FileManager.default.removeItem(at: out) }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/bash")
    p.arguments = [root.appendingPathComponent("scripts/gen-protos.sh").path, "--out", out.path]
    try p.run()
    p.waitUntilExit()
    #expect(p.terminationStatus == 0, "scripts/gen-protos.sh failed (is protoc-c installed?)")
    let committed = root.appendingPathComponent("Sources/CMarkerdProto")
    let fm = FileManager.default
    func files(_ base: URL) -> [String] {
        (fm.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? [])
            .filter { name in var d: ObjCBool = false
                return !name.hasSuffix("/") && fm.fileExists(atPath: base.appendingPathComponent(name).path, isDirectory: &d) && !d.boolValue }
            .sorted()
    }
    let expected = files(out)
    #expect(!expected.isEmpty)
    #expect(files(committed) == expected, "files differ: run scripts/gen-protos.sh and commit")
    for name in expected {
        let a = fm.contents(atPath: out.appendingPathComponent(name).path)
        let b = fm.contents(atPath: committed.appendingPathComponent(name).path)
        #expect(a == b, "\(name) is stale: run scripts/gen-protos.sh and commit the result")
    }
}

/// Sources/MarkerdAPI/Generated/V1+*.swift must be what scripts/gen-swift-api/gen.py makes from Protos/,
/// and nothing else lives in that folder.
@Test("generated Swift API types are fresh")
func generatedSwiftIsFresh() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("markerd-swift-\(UInt64.random(in: 0...UInt64.max))")
    try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: out) }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", root.appendingPathComponent("scripts/gen-swift-api/gen.py").path, out.path]
    p.standardOutput = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    #expect(p.terminationStatus == 0, "scripts/gen-swift-api/gen.py failed")
    let names = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
    #expect(names.count >= 9)
    for name in names {
        let fresh = FileManager.default.contents(atPath: out.appendingPathComponent(name).path)
        let committed = FileManager.default.contents(atPath: root.appendingPathComponent("Sources/MarkerdAPI/Generated/\(name)").path)
        #expect(fresh == committed, "Sources/MarkerdAPI/Generated/\(name) is stale: run scripts/gen-protos.sh and commit")
    }
    let committedNames = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources/MarkerdAPI/Generated").path).sorted()
    #expect(committedNames == names, "Sources/MarkerdAPI/Generated holds files gen.py does not make: \(committedNames)")
}
