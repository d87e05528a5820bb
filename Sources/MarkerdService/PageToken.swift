import MarkerdAPI

/// The stateless page tokens of GetClusterLeaves, ListLayers and ListMarkers (QueryViewport's are MarkerdCore's
/// `SpatialKey.pageToken`). A token names where the next page starts and nothing else: the
/// server keeps no state between pages. Each kind starts with its own tag, so a token passed to
/// another method is malformed.
enum PageToken {
    /// GetClusterLeaves: the leaves of `clusterID` from `offset` on: "l1.<hex cluster id>.<hex offset>".
    static func leaves(clusterID: UInt64, offset: Int) -> String {
        "l1.\(String(clusterID, radix: 16)).\(String(offset, radix: 16))"
    }

    /// The offset a GetClusterLeaves `token` starts at (0 for the first page, an empty token).
    /// - Throws: INVALID_ARGUMENT naming `page_token` for a token that `leaves(clusterID:offset:)`
    ///   did not make, or made for another cluster.
    static func leavesOffset(_ token: String, clusterID: UInt64) throws(RPCError) -> Int {
        if token.isEmpty { return 0 }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "l1", parts[1].utf8.count <= 16, parts[2].utf8.count <= 16,
              let id = UInt64(parts[1], radix: 16), let offset = Int(parts[2], radix: 16), offset >= 0,
              leaves(clusterID: id, offset: offset) == token
        else { throw malformed(token) }
        guard id == clusterID else {
            throw .invalidArgument("page_token is for cluster \(id), not \(clusterID)", field: "page_token")
        }
        return offset
    }

    /// ListLayers: the layers whose id sorts after `layerID`: "n1.<layer id>" (layer ids are
    /// [A-Za-z0-9._-], so the token needs no escaping).
    static func layers(after layerID: String) -> String { "n1.\(layerID)" }

    /// The layer id a ListLayers `token` continues after; nil for the first page (an empty token).
    /// - Throws: INVALID_ARGUMENT naming `page_token` for a token `layers(after:)` did not make.
    static func layersAfter(_ token: String) throws(RPCError) -> String? {
        if token.isEmpty { return nil }
        let id = String(token.dropFirst(3))
        guard token.hasPrefix("n1."), (try? MarkerConversion.checkName(id, what: "page_token")) != nil else { throw malformed(token) }
        return id
    }

    /// ListMarkers: `layerID`'s markers from storage slot `slot` on: "m1.<hex slot>.<layer id>"
    /// (layer ids are [A-Za-z0-9._-], so the token needs no escaping).
    static func markers(layerID: String, slot: Int) -> String { "m1.\(String(slot, radix: 16)).\(layerID)" }

    /// The slot a ListMarkers `token` starts at (0 for the first page, an empty token).
    /// - Throws: INVALID_ARGUMENT naming `page_token` for a token that `markers(layerID:slot:)`
    ///   did not make, or made for another layer.
    static func markersSlot(_ token: String, layerID: String) throws(RPCError) -> Int {
        if token.isEmpty { return 0 }
        let parts = token.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "m1", parts[1].utf8.count <= 16,
              let slot = Int(parts[1], radix: 16), slot >= 0,
              markers(layerID: String(parts[2]), slot: slot) == token
        else { throw malformed(token) }
        guard parts[2] == layerID else {
            throw .invalidArgument("page_token is for layer \"\(parts[2].prefix(64))\", not \"\(layerID)\"", field: "page_token")
        }
        return slot
    }

    /// ListFences: `layerID`'s fences whose id sorts after `fenceID`: "f1.<layer id>/<fence id>"
    /// (ids are [A-Za-z0-9._-], so "/" separates them).
    static func fences(layerID: String, after fenceID: String) -> String { "f1.\(layerID)/\(fenceID)" }

    /// The fence id a ListFences `token` continues after; nil for the first page (an empty token).
    /// - Throws: INVALID_ARGUMENT naming `page_token` for a token `fences(layerID:after:)` did
    ///   not make, or made for another layer.
    static func fencesAfter(_ token: String, layerID: String) throws(RPCError) -> String? {
        if token.isEmpty { return nil }
        let parts = token.dropFirst(3).split(separator: "/", omittingEmptySubsequences: false)
        guard token.hasPrefix("f1."), parts.count == 2,
              (try? MarkerConversion.checkName(String(parts[0]), what: "page_token")) != nil,
              (try? MarkerConversion.checkName(String(parts[1]), what: "page_token")) != nil
        else { throw malformed(token) }
        guard parts[0] == layerID else {
            throw .invalidArgument("page_token is for layer \"\(parts[0])\", not \"\(layerID.prefix(64))\"", field: "page_token")
        }
        return String(parts[1])
    }

    /// A page size within 0...`maximum` (0 means `defaultSize`).
    /// - Throws: INVALID_ARGUMENT naming `page_size` above `maximum`.
    static func size(_ requested: UInt32, default defaultSize: Int, maximum: Int) throws(RPCError) -> Int {
        guard requested <= maximum else {
            throw .invalidArgument("page_size \(requested) is more than \(maximum)", field: "page_size")
        }
        return requested == 0 ? defaultSize : Int(requested)
    }

    private static func malformed(_ token: String) -> RPCError {
        .invalidArgument("page_token \"\(token.prefix(64))\" is malformed (pass a previous response's next_page_token)", field: "page_token")
    }
}
