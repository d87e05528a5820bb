import Dispatch
import Foundation
import Synchronization
import MarkerdCluster
import MarkerdTestSupport
import Testing

/// The placement map and the member registry on a real `nats-server -js`.
@Suite(.serialized) struct PlacementMapTests {
    @Test func layerIDsMapToValidKeysAndBack() {
        // Dots separate subject tokens: no key may start or end with one or hold two in a row.
        for layer in ["a", "shops.tokyo", ".x", "x.", "a..b", "A-b_c.9", String(repeating: ".", count: 128)] {
            let key = PlacementMap.key(for: layer)
            #expect(!key.contains("."), "\(layer) -> \(key)")
            #expect(PlacementMap.layer(forKey: key) == layer)
        }
        #expect(PlacementMap.key(for: "a.b") != PlacementMap.key(for: "a_b"))
        #expect(PlacementMap.layer(forKey: "a.b") == nil)
    }

    @Test func concurrentClaimsOfOneLayerHaveExactlyOneWinner() throws {
        let nats = try PlacementNatsServer()
        defer { nats.stop() }
        let groups = ["a", "b", "c"]
        let maps = try groups.map { g in try PlacementMap(connection: NatsConnection(servers: [nats.url], name: "test-\(g)")) }
        defer { maps.forEach { $0.stop() } }
        for i in 0..<20 {
            let layer = "race.\(i)"
            let owners = Mutex([String?](repeating: nil, count: groups.count))
            DispatchQueue.concurrentPerform(iterations: groups.count) { g in
                let owner = try? maps[g].claim(layer, for: groups[g])
                owners.withLock { $0[g] = owner }
            }
            let seen = owners.withLock { $0 }
            let winner = try #require(seen[0])
            #expect(groups.contains(winner))
            #expect(seen.allSatisfy { $0 == winner }, "layer \(layer): claims answered \(seen)")
            // Every replica's local copy converges on the winner.
            try waitUntil("every map places \(layer) on \(winner)") { maps.allSatisfy { $0.group(of: layer) == winner } }
        }
        // Released: the next claim places it anew, and the others see the release.
        try maps[1].release("race.0")
        try waitUntil("race.0 released everywhere") { maps.allSatisfy { $0.group(of: "race.0") == nil } }
        #expect(try maps[2].claim("race.0", for: "c") == "c")
    }

    @Test func placementsAreLoadedBeforeTheMapIsReturned() throws {
        let nats = try PlacementNatsServer()
        defer { nats.stop() }
        let first = try PlacementMap(connection: NatsConnection(servers: [nats.url], name: "first"))
        defer { first.stop() }
        for i in 0..<50 { _ = try first.claim("layer-\(i)", for: i % 2 == 0 ? "even" : "odd") }
        let later = try PlacementMap(connection: NatsConnection(servers: [nats.url], name: "later"))
        defer { later.stop() }
        for i in 0..<50 { #expect(later.group(of: "layer-\(i)") == (i % 2 == 0 ? "even" : "odd")) }
        #expect(later.group(of: "layer-50") == nil)
    }

    @Test func aDeadMemberDropsOutAfterMaxAgeAndAStoppedOneAtOnce() throws {
        let nats = try PlacementNatsServer()
        defer { nats.stop() }
        let beat = Duration.milliseconds(200)
        func register(_ node: String, _ connection: NatsConnection, maxAge: Duration = .seconds(1)) throws -> MemberRegistry {
            try MemberRegistry(connection: connection, me: Member(group: "g", node: node, endpoints: ["tcp://\(node):7450"], httpEndpoints: []),
                               heartbeat: beat, maxAge: maxAge)
        }
        func connect(_ name: String) throws -> NatsConnection { try NatsConnection(servers: [nats.url], name: name) }
        // Two observers: one counts members dead 1 s after their last heartbeat, one after 60 s.
        let observer = try register("observer", connect("observer"))
        let patient = try register("patient", connect("patient"), maxAge: .seconds(60))
        defer { observer.stop(); patient.stop() }
        let crashing = try connect("crashing")
        let dead = try register("dead", crashing)
        defer { dead.stop() }
        let leaving = try register("leaving", connect("leaving"))
        let all = ["dead", "leaving", "observer", "patient"]
        try waitUntil("four members of g") { observer.members(of: "g").map(\.node) == all }
        // Alive across several heartbeats, longer than the 1 s window since they registered.
        let started = ContinuousClock.now
        try waitUntil("2 s passed") { ContinuousClock.now - started > .seconds(2) }
        #expect(observer.members(of: "g").map(\.node) == all)

        // A crash (no goodbye): its entry stays until it ages out of the 1 s window.
        crashing.close()
        try waitUntil("the dead member drops out") { observer.members(of: "g").map(\.node) == ["leaving", "observer", "patient"] }
        #expect(patient.members(of: "g").map(\.node) == all, "within 60 s of its last heartbeat it still counts")

        // A graceful stop deletes the entry: gone even for the 60 s observer.
        leaving.stop()
        try waitUntil("the stopped member drops out") { !patient.members(of: "g").map(\.node).contains("leaving") }
        #expect(observer.members(of: "other").isEmpty)
    }
}
