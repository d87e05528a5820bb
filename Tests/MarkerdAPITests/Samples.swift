// Written once by a throwaway script from Protos/ (not kept in the repository): a value for every
// message with every field set, used by the round-trip tests. Edit by hand when the protos change.
import MarkerdAPI

enum Full {
    static let request = V1.Request(
        method: "method-ü1",
        requestID: 1099511627778,
        idempotencyKey: "idempotency_key-ü3",
        timeoutMs: 2147483652,
        authToken: "auth_token-ü5",
        payload: [0, 1, 6, 255]
    )
    static let response = V1.Response(
        requestID: 1099511627777,
        code: .unauthenticated,
        message: "message-ü3",
        payload: [0, 1, 4, 255],
        fieldViolations: [V1.FieldViolation(field: "markers[2].position.latitude", description: "description-ü2"), V1.FieldViolation()]
    )
    static let latLng = V1.LatLng(
        latitude: 1.5,
        longitude: 2.5
    )
    static let bounds = V1.Bounds(
        west: 1.5,
        south: 2.5,
        east: 3.5,
        north: 4.5
    )
    static let anchor = V1.Anchor(
        x: 1.25,
        y: 2.25
    )
    static let tilingOptions = V1.TilingOptions(
        enabled: false,
        minMarkerCount: 2147483650,
        tileSize: 2147483651
    )
    static let clusteringOptions = V1.ClusteringOptions(
        enabled: true,
        radiusPx: 2.25,
        minPoints: 2147483651,
        maxZoom: 2147483652,
        extent: 2147483653,
        algorithm: .supercluster
    )
    static let pointTileOptions = V1.PointTileOptions(
        mode: .cluster,
        maxFeatures: 2147483650,
        maxBytes: 2147483651
    )
    static let layerOptions = V1.LayerOptions(
        tiling: Full.tilingOptions,
        clustering: Full.clusteringOptions,
        pointTile: Full.pointTileOptions
    )
    static let layer = V1.Layer(
        id: "id-ü1",
        options: Full.layerOptions,
        version: 1099511627779,
        mode: .tiled,
        markerCount: 1099511627781
    )
    static let layerStats = V1.LayerStats(
        layerID: "layer_id-ü1",
        markerCount: 1099511627778,
        staticMarkerCount: 1099511627779,
        liveMarkerCount: 1099511627780,
        hiddenMarkerCount: 1099511627781,
        approximateBytes: 1099511627782,
        mode: .tiled,
        version: 1099511627784
    )
    static let createLayerRequest = V1.CreateLayerRequest(
        layerID: "layer_id-ü1",
        options: Full.layerOptions
    )
    static let createLayerResponse = V1.CreateLayerResponse(
        layer: Full.layer
    )
    static let getLayerRequest = V1.GetLayerRequest(
        layerID: "layer_id-ü1"
    )
    static let getLayerResponse = V1.GetLayerResponse(
        layer: Full.layer
    )
    static let listLayersRequest = V1.ListLayersRequest(
        pageSize: 2147483649,
        pageToken: "page_token-ü2"
    )
    static let listLayersResponse = V1.ListLayersResponse(
        layers: [Full.layer, V1.Layer()],
        nextPageToken: "next_page_token-ü2"
    )
    static let deleteLayerRequest = V1.DeleteLayerRequest(
        layerID: "layer_id-ü1"
    )
    static let deleteLayerResponse = V1.DeleteLayerResponse(
        removedCount: 1099511627777
    )
    static let getLayerStatsRequest = V1.GetLayerStatsRequest(
        layerID: "layer_id-ü1"
    )
    static let getLayerStatsResponse = V1.GetLayerStatsResponse(
        stats: Full.layerStats
    )
    static let defaultPin = V1.DefaultPin(
        fillColor: 2147483649,
        strokeColor: 2147483650,
        strokeWidth: 3.25,
        scale: 4.25,
        label: "label-ü5",
        labelColor: 2147483654,
        labelSize: 7.25
    )
    static let registerIconRequest = V1.RegisterIconRequest(
        iconID: "icon_id-ü1",
        png: [0, 1, 2, 255],
        anchor: Full.anchor
    )
    static let registerIconResponse = V1.RegisterIconResponse(
        iconID: "icon_id-ü1",
        width: 2147483650,
        height: 2147483651
    )
    static let animation = V1.Animation(
        kind: .bounce,
        durationMs: 2147483650,
        endsAtUnixMs: -1700000000003
    )
    static let marker = V1.Marker(
        id: "id-ü1",
        position: Full.latLng,
        icon: .pin(Full.defaultPin),
        anchor: Full.anchor,
        zIndex: -106,
        clickable: false,
        draggable: true,
        animation: Full.animation,
        visible: false,
        attributes: ["b": "2", "a": "ü", "": ""],
        extra: [0, 1, 12, 255]
    )
    static let upsertMarkersRequest = V1.UpsertMarkersRequest(
        layerID: "layer_id-ü1",
        markers: [Full.marker, V1.Marker()]
    )
    static let upsertMarkersResponse = V1.UpsertMarkersResponse(
        createdCount: 1099511627777,
        updatedCount: 1099511627778,
        layerVersion: 1099511627779
    )
    static let removeMarkersRequest = V1.RemoveMarkersRequest(
        layerID: "layer_id-ü1",
        ids: ["one", "", "drei-ü"]
    )
    static let removeMarkersResponse = V1.RemoveMarkersResponse(
        removedCount: 1099511627777,
        notFoundCount: 1099511627778,
        layerVersion: 1099511627779
    )
    static let getMarkersRequest = V1.GetMarkersRequest(
        layerID: "layer_id-ü1",
        ids: ["one", "", "drei-ü"]
    )
    static let getMarkersResponse = V1.GetMarkersResponse(
        markers: [Full.marker, V1.Marker()],
        missingIDs: ["one", "", "drei-ü"]
    )
    static let listMarkersRequest = V1.ListMarkersRequest(
        layerID: "layer_id-ü1",
        pageSize: 2147483650,
        pageToken: "page_token-ü3"
    )
    static let listMarkersResponse = V1.ListMarkersResponse(
        markers: [Full.marker, V1.Marker()],
        nextPageToken: "next_page_token-ü2",
        layerVersion: 1099511627779
    )
    static let clearLayerRequest = V1.ClearLayerRequest(
        layerID: "layer_id-ü1"
    )
    static let clearLayerResponse = V1.ClearLayerResponse(
        removedCount: 1099511627777,
        layerVersion: 1099511627778
    )
    static let markerMove = V1.MarkerMove(
        id: "id-ü1",
        position: Full.latLng
    )
    static let moveMarkersRequest = V1.MoveMarkersRequest(
        layerID: "layer_id-ü1",
        moves: [Full.markerMove, V1.MarkerMove()]
    )
    static let moveMarkersResponse = V1.MoveMarkersResponse(
        movedCount: 1099511627777,
        notFoundIDs: ["one", "", "drei-ü"],
        layerVersion: 1099511627779
    )
    static let tileDescriptor = V1.TileDescriptor(
        urlTemplate: "url_template-ü1",
        tileSize: 2147483650,
        version: 1099511627779
    )
    static let queryViewportRequest = V1.QueryViewportRequest(
        layerID: "layer_id-ü1",
        bounds: Full.bounds,
        zoom: 3.5,
        density: 2147483652,
        pageSize: 2147483653,
        pageToken: "page_token-ü6"
    )
    static let queryViewportResponse = V1.QueryViewportResponse(
        mode: .tiled,
        markers: [Full.marker, V1.Marker()],
        tiles: Full.tileDescriptor,
        staticInViewCount: 1099511627780,
        liveInViewCount: 1099511627781,
        nextPageToken: "next_page_token-ü6",
        layerVersion: 1099511627783
    )
    static let hitTestRequest = V1.HitTestRequest(
        layerID: "layer_id-ü1",
        point: Full.latLng,
        zoom: 3.5,
        density: 2147483652,
        tolerancePx: 5.25,
        maxResults: 2147483654
    )
    static let markerHit = V1.MarkerHit(
        marker: Full.marker,
        tiled: true
    )
    static let hitTestResponse = V1.HitTestResponse(
        hits: [Full.markerHit, V1.MarkerHit()]
    )
    static let beginDragRequest = V1.BeginDragRequest(
        layerID: "layer_id-ü1",
        markerID: "marker_id-ü2"
    )
    static let beginDragResponse = V1.BeginDragResponse(
        dragID: "drag_id-ü1",
        marker: Full.marker
    )
    static let dragToRequest = V1.DragToRequest(
        layerID: "layer_id-ü1",
        dragID: "drag_id-ü2",
        position: Full.latLng
    )
    static let dragToResponse = V1.DragToResponse()
    static let endDragRequest = V1.EndDragRequest(
        layerID: "layer_id-ü1",
        dragID: "drag_id-ü2",
        position: Full.latLng
    )
    static let endDragResponse = V1.EndDragResponse(
        marker: Full.marker,
        layerVersion: 1099511627778
    )
    static let cancelDragRequest = V1.CancelDragRequest(
        layerID: "layer_id-ü1",
        dragID: "drag_id-ü2"
    )
    static let cancelDragResponse = V1.CancelDragResponse(
        marker: Full.marker
    )
    static let createSnapshotRequest = V1.CreateSnapshotRequest()
    static let createSnapshotResponse = V1.CreateSnapshotResponse(
        path: "path-ü1",
        markerCount: 1099511627778,
        sizeBytes: 1099511627779,
        durationMs: 1099511627781
    )
    static let getServerInfoRequest = V1.GetServerInfoRequest()
    static let getServerInfoResponse = V1.GetServerInfoResponse(
        version: "version-ü1",
        uptimeMs: 1099511627782,
        layerCount: 1099511627779,
        markerCount: 1099511627780,
        durable: true
    )
    static let journalRecord = V1.JournalRecord(
        sequence: 1099511627777,
        method: "method-ü2",
        idempotencyKey: "idempotency_key-ü3",
        payload: [0, 1, 4, 255],
        appliedAtUnixMs: -1700000000005,
        response: [0, 1, 6, 255],
        requestDigest: 1099511627783
    )
    static let snapshotSection = V1.SnapshotSection(
        section: .header(Full.snapshotHeader)
    )
    static let snapshotHeader = V1.SnapshotHeader(
        formatVersion: 2147483649,
        coversSequence: 1099511627778,
        createdAtUnixMs: -1700000000003
    )
    static let snapshotFooter = V1.SnapshotFooter(
        layers: 1099511627777,
        markers: 1099511627778
    )
    static let idempotencyEntry = V1.IdempotencyEntry(
        key: "key-ü1",
        requestDigest: 1099511627778,
        response: [0, 1, 3, 255],
        atUnixMs: -1700000000004
    )

    /// One fully set value of every message type.
    static let all: [any ProtoMessage] = [
        request,
        response,
        latLng,
        bounds,
        anchor,
        tilingOptions,
        clusteringOptions,
        pointTileOptions,
        layerOptions,
        layer,
        layerStats,
        createLayerRequest,
        createLayerResponse,
        getLayerRequest,
        getLayerResponse,
        listLayersRequest,
        listLayersResponse,
        deleteLayerRequest,
        deleteLayerResponse,
        getLayerStatsRequest,
        getLayerStatsResponse,
        defaultPin,
        registerIconRequest,
        registerIconResponse,
        animation,
        marker,
        upsertMarkersRequest,
        upsertMarkersResponse,
        removeMarkersRequest,
        removeMarkersResponse,
        getMarkersRequest,
        getMarkersResponse,
        listMarkersRequest,
        listMarkersResponse,
        clearLayerRequest,
        clearLayerResponse,
        markerMove,
        moveMarkersRequest,
        moveMarkersResponse,
        tileDescriptor,
        queryViewportRequest,
        queryViewportResponse,
        hitTestRequest,
        markerHit,
        hitTestResponse,
        beginDragRequest,
        beginDragResponse,
        dragToRequest,
        dragToResponse,
        endDragRequest,
        endDragResponse,
        cancelDragRequest,
        cancelDragResponse,
        createSnapshotRequest,
        createSnapshotResponse,
        getServerInfoRequest,
        getServerInfoResponse,
        journalRecord,
        snapshotSection,
        snapshotHeader,
        snapshotFooter,
        idempotencyEntry,
    ]

    /// Every message type.
    static let types: [any ProtoMessage.Type] = [
        V1.Request.self,
        V1.Response.self,
        V1.LatLng.self,
        V1.Bounds.self,
        V1.Anchor.self,
        V1.TilingOptions.self,
        V1.ClusteringOptions.self,
        V1.PointTileOptions.self,
        V1.LayerOptions.self,
        V1.Layer.self,
        V1.LayerStats.self,
        V1.CreateLayerRequest.self,
        V1.CreateLayerResponse.self,
        V1.GetLayerRequest.self,
        V1.GetLayerResponse.self,
        V1.ListLayersRequest.self,
        V1.ListLayersResponse.self,
        V1.DeleteLayerRequest.self,
        V1.DeleteLayerResponse.self,
        V1.GetLayerStatsRequest.self,
        V1.GetLayerStatsResponse.self,
        V1.DefaultPin.self,
        V1.RegisterIconRequest.self,
        V1.RegisterIconResponse.self,
        V1.Animation.self,
        V1.Marker.self,
        V1.UpsertMarkersRequest.self,
        V1.UpsertMarkersResponse.self,
        V1.RemoveMarkersRequest.self,
        V1.RemoveMarkersResponse.self,
        V1.GetMarkersRequest.self,
        V1.GetMarkersResponse.self,
        V1.ListMarkersRequest.self,
        V1.ListMarkersResponse.self,
        V1.ClearLayerRequest.self,
        V1.ClearLayerResponse.self,
        V1.MarkerMove.self,
        V1.MoveMarkersRequest.self,
        V1.MoveMarkersResponse.self,
        V1.TileDescriptor.self,
        V1.QueryViewportRequest.self,
        V1.QueryViewportResponse.self,
        V1.HitTestRequest.self,
        V1.MarkerHit.self,
        V1.HitTestResponse.self,
        V1.BeginDragRequest.self,
        V1.BeginDragResponse.self,
        V1.DragToRequest.self,
        V1.DragToResponse.self,
        V1.EndDragRequest.self,
        V1.EndDragResponse.self,
        V1.CancelDragRequest.self,
        V1.CancelDragResponse.self,
        V1.CreateSnapshotRequest.self,
        V1.CreateSnapshotResponse.self,
        V1.GetServerInfoRequest.self,
        V1.GetServerInfoResponse.self,
        V1.JournalRecord.self,
        V1.SnapshotSection.self,
        V1.SnapshotHeader.self,
        V1.SnapshotFooter.self,
        V1.IdempotencyEntry.self,
    ]
}
