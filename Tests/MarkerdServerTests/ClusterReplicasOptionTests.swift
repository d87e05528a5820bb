import MarkerdServer
import Testing

/// `--cluster-replicas`: the copies JetStream keeps of the group's log when this node creates it.
@Suite struct ClusterReplicasOptionTests {
    @Test("--cluster-replicas takes 1-5; by default min(3, NATS servers listed)")
    func parsesReplicas() throws {
        let one = "nats://127.0.0.1:4222", three = "nats://a:4222,nats://b:4222,nats://c:4222"
        #expect(try MarkerdConfiguration.parse(["--cluster", one]).effectiveClusterReplicas == 1)
        #expect(try MarkerdConfiguration.parse(["--cluster", three]).effectiveClusterReplicas == 3)
        #expect(try MarkerdConfiguration.parse(["--cluster", three + ",nats://d:4222"]).effectiveClusterReplicas == 3)
        #expect(try MarkerdConfiguration.parse(["--cluster", three, "--cluster-replicas", "1"]).effectiveClusterReplicas == 1)
        #expect(try MarkerdConfiguration.parse(["--cluster", one, "--cluster-replicas", "5"]).effectiveClusterReplicas == 5)
        for bad in ["0", "6", "-1", "three"] {
            #expect(throws: MarkerdConfiguration.ParseError.self, "\(bad)") { try MarkerdConfiguration.parse(["--cluster-replicas", bad]) }
        }
    }
}
