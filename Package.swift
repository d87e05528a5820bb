// swift-tools-version: 6.0
//
// markerd: a map-marker server. Data flows one way:
//   bytes -> MarkerdTransport (NNG) -> MarkerdServer (RPC dispatch) -> MarkerdService
//         -> MarkerdCore / MarkerdRender / MarkerdJournal -> bytes
// C libraries sit behind C* targets; exactly one Swift module imports each of them:
//   CNNG -> MarkerdTransport, CMarkerdProto + CProtobufC -> MarkerdAPI,
//   CPNG (libpng decoding, libdeflate encoding) + CCairo + CPango (Pango: HarfBuzz shaping, bidi, fontconfig fallback) -> MarkerdRender,
//   CMbedCrypto (libmbedcrypto: SHA-256, HMAC) -> MarkerdAuth, CNats (libnats: JetStream) -> MarkerdCluster.
import PackageDescription

let package = Package(
    name: "markerd",
    products: [
        .executable(name: "markerd", targets: ["markerd"]),
        .executable(name: "markerctl", targets: ["markerctl"]),
        .executable(name: "marker-bench", targets: ["marker-bench"]),
        // The Swift client for backends: `.product(name: "MarkerdClient", package: "markerd")`.
        .library(name: "MarkerdClient", targets: ["MarkerdClient"]),
    ],
    targets: [
        // MARK: C libraries
        .systemLibrary(name: "CNNG", path: "Sources/CNNG"),
        .systemLibrary(name: "CProtobufC", path: "Sources/CProtobufC", pkgConfig: "libprotobuf-c"),
        .target(
            name: "CMarkerdProto",
            dependencies: ["CProtobufC"],
            path: "Sources/CMarkerdProto",
            linkerSettings: [.linkedLibrary("protobuf-c")]
        ),
        .target(
            name: "CPNG",
            path: "Sources/CPNG",
            linkerSettings: [.linkedLibrary("png16"), .linkedLibrary("deflate")]
        ),
        .systemLibrary(name: "CCairo", path: "Sources/CCairo", pkgConfig: "cairo"),
        .systemLibrary(name: "CPango", path: "Sources/CPango", pkgConfig: "pangocairo"),
        .systemLibrary(name: "CMbedCrypto", path: "Sources/CMbedCrypto"),
        .systemLibrary(name: "CNats", path: "Sources/CNats", pkgConfig: "libnats"),

        // MARK: Swift modules
        // Pure Swift: geometry, marker table, grid index, tiling policy, hit-tests. No C imports.
        .target(name: "MarkerdCore"),
        // Swift types for the protobuf API, encoded and decoded with protobuf-c.
        .target(name: "MarkerdAPI", dependencies: ["CMarkerdProto", "CProtobufC"]),
        // NNG sockets: the asynchronous REP server, a REQ client, typed NNG errors.
        .target(name: "MarkerdTransport", dependencies: ["CNNG"]),
        // PNG decoding/encoding, tile rendering, text (labels) through Pango.
        .target(name: "MarkerdRender", dependencies: ["MarkerdCore", "CPNG", "CCairo", "CPango"]),
        // Durability: journal with group commit, snapshots, recovery.
        .target(name: "MarkerdJournal"),
        // The service: layers, icons, markers, queries, drags, idempotency.
        .target(name: "MarkerdService", dependencies: ["MarkerdCore", "MarkerdAPI", "MarkerdRender", "MarkerdJournal"]),
        // Tokens and scopes (the auth file), signed tile URLs: SHA-256 and HMAC through libmbedcrypto.
        .target(name: "MarkerdAuth", dependencies: ["CMbedCrypto"]),
        // The server: RPC envelope, dispatch, authorization, deadlines, metrics, wiring to the transport.
        .target(name: "MarkerdServer", dependencies: ["MarkerdService", "MarkerdAPI", "MarkerdTransport", "MarkerdJournal", "MarkerdAuth",
                                                   "MarkerdCluster"]),
        // Cluster mode: the replicated log on a NATS JetStream stream, the layer placement map in a
        // JetStream key-value bucket (libnats).
        .target(name: "MarkerdCluster", dependencies: ["CNats", "MarkerdJournal"]),
        // A Swift client over the same RPC (markerctl, benchmarks, tests).
        .target(name: "MarkerdClient", dependencies: ["MarkerdAPI", "MarkerdTransport"]),

        // Shared by the test targets and marker-bench (never by markerd or markerctl): seeded RNG,
        // SEED= handling, the real places fixture (`Places`), real markerd processes (`MarkerdProcess`).
        .target(name: "MarkerdTestSupport", dependencies: ["MarkerdAPI", "MarkerdClient"]),

        // MARK: Executables
        .executableTarget(name: "markerd", dependencies: ["MarkerdServer"]),
        .executableTarget(name: "markerctl", dependencies: ["MarkerdClient", "MarkerdAPI", "MarkerdTransport"]),
        .executableTarget(
            name: "marker-bench",
            dependencies: ["MarkerdCore", "MarkerdAPI", "MarkerdTransport", "MarkerdRender", "MarkerdService", "MarkerdServer", "MarkerdClient",
                           "MarkerdTestSupport", "MarkerdAuth"],
            path: "Benchmarks/marker-bench"
        ),

        // MARK: Tests
        .testTarget(name: "MarkerdCoreTests", dependencies: ["MarkerdTestSupport", "MarkerdCore"], exclude: ["Fixtures"]),
        .testTarget(name: "MarkerdAPITests", dependencies: ["MarkerdTestSupport", "MarkerdAPI"]),
        .testTarget(name: "MarkerdTransportTests", dependencies: ["MarkerdTestSupport", "MarkerdTransport"]),
        .testTarget(name: "MarkerdRenderTests", dependencies: ["MarkerdTestSupport", "MarkerdRender"], resources: [.copy("Fixtures")]),
        .testTarget(name: "MarkerdJournalTests", dependencies: ["MarkerdTestSupport", "MarkerdJournal"]),
        .testTarget(name: "MarkerdAuthTests", dependencies: ["MarkerdAuth"]),
        .testTarget(name: "MarkerdServiceTests", dependencies: ["MarkerdTestSupport", "MarkerdService", "MarkerdAPI", "MarkerdCore"]),
        .testTarget(
            name: "MarkerdServerTests",
            dependencies: ["MarkerdTestSupport", "MarkerdServer", "MarkerdService", "MarkerdClient", "MarkerdAPI", "MarkerdTransport", "MarkerdJournal",
                           "MarkerdAuth"],
            exclude: ["fuzz-regressions.txt"]
        ),
        // Cluster mode end to end: real nats-server and markerd processes (needs `nats-server`).
        .testTarget(
            name: "MarkerdClusterTests",
            dependencies: ["MarkerdTestSupport", "MarkerdCluster", "MarkerdServer", "MarkerdClient", "MarkerdAPI", "MarkerdTransport"]
        ),
    ]
)
