import MarkerdAPI
import MarkerdCluster
import MarkerdService
import Synchronization

/// Cluster mode's shards (`--cluster`): which replica group holds each layer
/// (``PlacementMap``), which replicas are alive (``MemberRegistry``), and what a replica of
/// group ``group`` does with a request for a layer: serve it, or answer MOVED with a
/// ``V1/Redirect`` to the owning group's live members (Redis Cluster's MOVED).
///
/// - A request naming a layer placed on another group: MOVED, nothing done (``redirect(for:)``,
///   a local lookup: no NATS round trip per request).
/// - A layer with no placement: served here as on a single node (NOT_FOUND for reads), except
///   CreateLayer, which first places the layer (``placeNewLayer(_:on:)``, an atomic create in the
///   bucket: of two replicas creating the same id at once exactly one group wins; the other
///   answers MOVED towards it).
/// - DeleteLayer removes the placement once the layer is gone here (``layerDeleted(_:)``).
///
/// ListLayers lists this replica's layers, i.e. its group's.
public final class ShardRouter: Sendable {
    /// This replica's group (`--cluster-group`).
    public let group: String
    /// This replica's name (`--node-id`).
    public let node: String
    /// Which group holds each layer (a local copy of the bucket).
    public let placements: PlacementMap
    let connection: NatsConnection
    /// Set by ``join(endpoints:httpEndpoints:)`` once the listeners are bound.
    private let registry = Mutex<MemberRegistry?>(nil)
    /// The members' liveness window (``MemberRegistry/maxAge``) and heartbeat.
    let memberMaxAge: Duration, memberHeartbeat: Duration
    /// JetStream replicas of the two buckets.
    let replicas: Int

    /// Connects to NATS and loads the placement map. Nothing is registered until ``join(endpoints:httpEndpoints:)``.
    /// - Parameters:
    ///   - replicas: JetStream replicas of the buckets (at most the NATS servers).
    ///   - memberMaxAge: how long a replica counts as alive after its last heartbeat. Default 3 s.
    ///   - memberHeartbeat: how often a replica re-registers. Default 1 s.
    /// - Throws: ``NatsError`` when no NATS server answers or JetStream refuses the buckets.
    public init(servers: [String], group: String, node: String, replicas: Int,
                memberMaxAge: Duration = .seconds(3), memberHeartbeat: Duration = .seconds(1)) throws(NatsError) {
        self.group = group
        self.node = node
        self.replicas = replicas
        self.memberMaxAge = memberMaxAge
        self.memberHeartbeat = memberHeartbeat
        connection = try NatsConnection(servers: servers, name: "markerd-\(node)")
        placements = try PlacementMap(connection: connection, replicas: replicas)
    }

    /// Registers this replica in the members bucket (and keeps it registered), so redirects name it.
    public func join(endpoints: [String], httpEndpoints: [String]) throws(NatsError) {
        let me = Member(group: group, node: node, endpoints: endpoints, httpEndpoints: httpEndpoints)
        let r = try MemberRegistry(connection: connection, me: me, replicas: replicas,
                                   heartbeat: memberHeartbeat, maxAge: memberMaxAge)
        registry.withLock { $0 = r }
    }

    /// Leaves the cluster: deletes this replica's member entry (redirects stop naming it at once),
    /// stops watching and closes the NATS connection. Idempotent.
    public func stop() {
        registry.withLock { $0?.stop(); $0 = nil }
        placements.stop()
        connection.close()
    }

    /// MOVED's redirect when `layer` is placed on another group, else nil (serve it here). A local lookup.
    public func redirect(for layer: String) -> V1.Redirect? {
        guard let owner = placements.group(of: layer), owner != group else { return nil }
        return redirect(layer, to: owner)
    }

    /// The live members of `group` (a local lookup; empty before ``join(endpoints:httpEndpoints:)``).
    public func liveMembers(of group: String) -> [Member] {
        registry.withLock { $0?.members(of: group) } ?? []
    }

    /// The redirect to `owner`'s live members.
    func redirect(_ layer: String, to owner: String) -> V1.Redirect {
        let members = liveMembers(of: owner)
        var r = V1.Redirect()
        r.layerID = layer
        r.group = owner
        r.endpoints = members.flatMap(\.endpoints)
        r.httpEndpoints = members.flatMap(\.httpEndpoints)
        return r
    }

    /// CreateLayer of `layer` on this replica, to be placed on `target` (empty: this group).
    /// - Returns: nil to create it here (placed on this group: by this call or before), or the
    ///   redirect to the group it is placed on.
    /// - Throws: INVALID_ARGUMENT for a `target` that is no group name, FAILED_PRECONDITION for
    ///   another group without a live member, UNAVAILABLE when the placement bucket does not
    ///   answer (in each case nothing is placed or created).
    func placeNewLayer(_ layer: String, on target: String) throws(RPCError) -> V1.Redirect? {
        let owner: String
        if let placed = placements.group(of: layer) {
            owner = placed
        } else {
            let target = target.isEmpty ? group : target
            guard MarkerdConfiguration.isClusterName(target, maxBytes: 32) else {
                throw .invalidArgument("group \"\(target)\" is not 1-32 bytes of [A-Za-z0-9_-]", field: "group")
            }
            if target != group, redirect(layer, to: target).endpoints.isEmpty {
                throw .failedPrecondition("group \(target) has no live member: layer \(layer) not placed")
            }
            do {
                owner = try placements.claim(layer, for: target)
            } catch {
                throw .unavailable("layer \(layer) not placed: \(error.description)")
            }
        }
        return owner == group ? nil : redirect(layer, to: owner)
    }

    /// Removes `layer`'s placement when it is this group's: after DeleteLayer (or a CreateLayer
    /// that failed after placing it). A failure is logged; the placement then stays, pointing at
    /// this group, where a CreateLayer can make the layer again.
    func layerDeleted(_ layer: String) {
        guard placements.group(of: layer) == group else { return }
        do {
            try placements.release(layer)
        } catch {
            Log.error("placement not removed", ["layer": layer, "error": error.description])
        }
    }
}
