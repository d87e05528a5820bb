import Foundation
import MarkerdTestSupport

/// marker-bench's command line.
struct Options: Sendable {
    /// Marker counts to measure, one markerd process each. Default [1,000,000].
    var sizes: [Int] = [1_000_000]
    /// Seed of every random choice (layer, viewports, hit points, moves). Default 42.
    var seed: UInt64 = 42
    /// Timed calls per latency figure (QueryViewport, HitTest, single MoveMarkers). Default 2000.
    var queries: Int = 2000
    /// Smoke run: 100k markers, fewer queries and moves, a smaller durability load.
    var quick = false
    /// Skip the durability section (journal, fsync, snapshots, restart).
    var skipDurability = false
    /// Durability: only the restart from snapshot + journal tail (`--only restart`; the load
    /// runs with `--fsync off`, which writes the same files faster).
    var restartOnly = false
    /// Run the RPC section (load, memory, queries, moves) and the in-process section.
    var runRPC = true
    var runInProcess = true
    /// Run the clusters section (grid clusters vs pysupercluster, `ClusterBench`).
    var runClusters = true
    /// Run the cluster-mode section (`ClusterModeBench`: three nats-server and three replicas
    /// against a single node; `--only cluster`; skipped with a row when nats-server is missing).
    /// Not the marker clusters of `runClusters`.
    var runClusterMode = true
    /// In-process QueryViewport server work (`--only viewport`; never part of a full run).
    var runViewport = false
    /// In-process GetClusters server work (`--only clusterwork`; never part of a full run).
    var runClusterWork = false
    /// The change feed: MoveMarkers with and without `--publish`, event delivery, and 10 s of
    /// batched moves with 8 subscribers (`--only feed`; never part of a full run).
    var runFeed = false
    /// The markerd binary. Default: `markerd` next to this executable.
    var markerdPath: String = Options.defaultMarkerdPath
    /// Where durable data directories are created (must be a real disk for fsync to mean
    /// anything). Default $TMPDIR or /tmp.
    var dataRoot: String = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
    /// Also try a few BulkLoader batch sizes / concurrencies and report the best. Default on.
    var tuneLoad = true
    /// Echo markerd's own log lines on standard error.
    var verbose = false
    /// Keep the durability section's data directories (their path is logged) instead of
    /// deleting them, e.g. to time restarts of other markerd builds on them.
    var keepData = false
    /// Run the raster-tile section (`TileBench`).
    var runTiles = true
    /// Run the point-tile section (`PointTileBench`: the z0 MVT, `--only pointtiles`).
    var runPointTiles = true
    /// Run the attribute section (`AttributeBench`: loads with and without three attributes,
    /// bytes per marker, `--only attributes`).
    var runAttributes = true
    /// In-process section: only the renders, with the node sweep only (`--only render`: quick
    /// profiling of `TileRenderer` without markerd).
    var renderOnly = false
    /// In-process section: only the z0 render with the node sweep, best of 20 (`--only z0`: a
    /// profile of the dense-tile sweep alone, for `perf record`).
    var zoomZeroOnly = false
    /// Run `CityTileBench` (`--only citytiles`: TileBench's cold tiles rendered in this process).
    var runCityTiles = false
    /// Run `DenseTileBench` (`--only densetiles`: the densest z10 city tiles, rendered again and
    /// again in this process by each path in turn).
    var runDenseTiles = false
    /// Run `OneCityBench` (`--only onecity`: one city's z10 tile, no 10M layer, no child process).
    var runOneCity = false
    /// In-process section: only the layer build and the single moves (`--only move`).
    var moveOnly = false
    /// Run `ApplyBench` (`--only apply`: the load's batch upserts in this process).
    var runApply = false
    /// Run `FenceBench` (`--only fences`: single moves with the checks of 10,000 fences, in this process).
    var runFences = false
    /// Run `AuthBench` (the token check's cost in this process; part of a full run, once).
    var runAuth = true
    /// Run `LabelBench` (`--only labels`: labelled vs unlabelled cold tiles on real places, and
    /// Mapnik's tiles of the same places; never part of a full run).
    var runLabels = false
    /// The real places `LabelBench` replicates (`--places`). Default: the fixture of the checkout
    /// marker-bench was built from (`Places.fixturePath`).
    var placesPath: String = Places.fixturePath
    /// Where `LabelBench` writes the z10 Paris tiles as PNG (`--png-dir`); nil: not written.
    var pngDir: String? = nil
    /// `LabelBench`: the most seconds Mapnik may take per zoom, loading included
    /// (`--mapnik-seconds`); a render still running then is stopped and reported as a lower
    /// bound. Default 45.
    var mapnikSeconds = 45
    /// `LabelBench`: the zooms measured, markerd's and Mapnik's (`--label-zooms`, some of
    /// `LabelBench.zooms`: 0, 3, 10, 14); nil: all of them. E.g. `--label-zooms 14` measures the
    /// z14 rows alone, without the seconds-long placements of z0, z3 and z10.
    var labelZooms: [Int]? = nil
    /// The Python with python3-mapnik (`--mapnik-python`). Default Debian's /usr/bin/python3.
    var mapnikPython = "/usr/bin/python3"
    /// Benchmarks/mapnik/render_places.py of the checkout marker-bench was built from.
    var mapnikScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("mapnik/render_places.py").path
    }
    /// Where `--report DIR` writes report.md (the table), rows.json (the rows and their latency
    /// samples) and the PNG plots of Benchmarks/plot_report.py; nil: standard output only.
    var reportDir: String? = nil
    /// Benchmarks/plot_report.py of the checkout marker-bench was built from.
    var plotScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("plot_report.py").path
    }
    /// The one section `--only` asked for, or nil.
    var only: String? = nil {
        didSet {
            guard let only else { return }
            runRPC = only == "rpc"; runInProcess = only == "inprocess" || only == "render" || only == "z0" || only == "move"
            moveOnly = only == "move"
            runApply = only == "apply"
            runFences = only == "fences"
            runAuth = only == "auth"
            runTiles = only == "tiles"
            runPointTiles = only == "pointtiles"
            runAttributes = only == "attributes"
            renderOnly = only == "render" || only == "z0"
            zoomZeroOnly = only == "z0"
            runCityTiles = only == "citytiles"
            runDenseTiles = only == "densetiles"
            runOneCity = only == "onecity"
            runClusters = only == "clusters"
            runClusterMode = only == "cluster"
            runViewport = only == "viewport"
            runClusterWork = only == "clusterwork"
            runFeed = only == "feed"
            runLabels = only == "labels"
            skipDurability = only != "durability" && only != "restart"
            restartOnly = only == "restart"
        }
    }

    /// Batches of MoveMarkers (1,000 moves each) timed for the moves/s figures.
    var moveBatches: Int { quick ? 30 : 1000 }
    /// Random single moves timed in-process on `MarkerLayer`.
    var inProcessMoves: Int { quick ? 200_000 : 1_000_000 }

    static var defaultMarkerdPath: String {
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return me.deletingLastPathComponent().appendingPathComponent("markerd").path
    }

    static let usage = """
    usage: marker-bench [options]

    Measures markerd through its RPC (a real `markerd` process on loopback TCP) and prints one
    markdown table to standard output; progress goes to standard error.

      --sizes N[,N...]     marker counts, e.g. 1000000,10000000. Default 1000000
      --seed N             seed for the synthetic layer, viewports, hit points, moves. Default 42
      --queries N          timed calls per latency figure. Default 2000
      --quick              smoke run: 100k markers, 300 queries, fewer moves
      --skip-durability    skip journal/fsync/snapshot/restart measurements
      --only SECTION       run one section: rpc, inprocess, durability, restart (the
                           durability section's restart from snapshot + journal tail only),
                           tiles, pointtiles (the z0 point tile: bytes, cold and
                           cached latency), clusters (GetClusters' marker
                           clusters), cluster (cluster mode: 3 nats-server -js
                           + 3 replicas on loopback: load, MoveMarkers and
                           UpsertMarkers latency vs a single node --fsync always,
                           a fresh replica's catch-up, HitTest throughput on 1
                           vs 3 replicas, failover after kill -9; skipped with
                           a row when nats-server is not installed), render (the in-process section's
                           renders only, node sweep only), z0 (only the
                           in-process z0 render with the node sweep, best of 20),
                           citytiles (the tiles section's cold tiles rendered
                           in-process, for profiling), densetiles (the 8
                           densest of those z10 tiles, each rendered 21 times
                           per path: thread CPU of the fastest and median
                           repetition, for comparing paths, and the one-thread
                           render's steps), onecity (one city of 23,333
                           markers built in this process, its z10 tile rendered
                           21 times by step; no markerd, no floor: quick, and
                           small enough for valgrind), viewport (QueryViewport's
                           server work in process, thread CPU time per call),
                           clusterwork (GetClusters' server work in process, the
                           clusters section's calls), move (the in-process
                           section's layer build and single moves only),
                           apply (the RPC load's batch upserts in process, thread
                           CPU per marker under the write lock and outside it),
                           auth (the token check: lookups and GetLayer dispatched
                           in process without and with --auth-file),
                           attributes (loads plain and with three attributes,
                           three fresh markerds each: rate ratio and bytes per
                           marker against the attributes' encoded size),
                           feed (MoveMarkers x1 with and without --publish in
                           turns, and MoveMarkers sent -> event at a subscriber
                           against the NNG floor, then 10 s of MoveMarkers
                           x1000 on 1M markers with 8 subscribers: moves/s and
                           events lost; never part of a full run), or
                           labels (real places, replicated to each size with
                           attributes name, category, population: cold tiles at
                           z0, z3, z10, z14 labelled vs unlabelled, the first
                           labelled tile per zoom, and Mapnik's renders of the
                           same places and tiles; never part of a full run)
      --places PATH        labels: the places TSV. Default Tests/Fixtures/places/cities.tsv
                           of the checkout marker-bench was built from
      --png-dir DIR        labels: write markerd's labelled and unlabelled and Mapnik's
                           z10 Paris tile (10/518/352) as PNG files into DIR
      --mapnik-seconds N   labels: stop Mapnik after N seconds per zoom, loading the
                           places included (a render still running gives a lower
                           bound). Default 45
      --label-zooms Z[,Z...]  labels: measure only these zooms (of 0, 3, 10, 14), markerd's
                           and Mapnik's. Default all four
      --mapnik-python PATH labels: the Python with python3-mapnik. Default /usr/bin/python3
      --report DIR         also write DIR/report.md (the table), DIR/rows.json (the rows and
                           their latency samples) and PNG plots of them (python3 with
                           matplotlib runs Benchmarks/plot_report.py; scripts/install-deps.sh
                           --bench installs it). DIR is created if missing
      --no-tune            do not try other BulkLoader batch sizes / concurrencies
      --markerd PATH       markerd binary. Default: markerd next to marker-bench
      --data-root DIR      parent of the temporary data directories. Default $TMPDIR or /tmp
      --verbose            echo markerd's log lines on standard error
      --keep-data          keep the durability data directories (the path is logged)
      -h, --help           this text

    Heap pages: glibc reads GLIBC_TUNABLES at startup only. The in-process rows run on this
    process's heap: set GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (`make bench` does) for markerd's
    transparent huge pages, which they depend on at 10M markers. markerd children get that
    tunable added unless GLIBC_TUNABLES already sets glibc.malloc.hugetlb, as deploy/markerd.service
    runs markerd; GLIBC_TUNABLES=glibc.malloc.hugetlb=0 keeps both on 4 KiB pages.
    """

    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses `arguments` (without the program name).
    static func parse(_ arguments: [String]) throws(ParseError) -> Options {
        var o = Options()
        var sizesGiven = false, queriesGiven = false
        var i = 0
        func value(_ name: String) throws(ParseError) -> String {
            i += 1
            guard i < arguments.count else { throw ParseError(description: "\(name) needs a value") }
            return arguments[i]
        }
        func count(_ text: Substring, _ name: String) throws(ParseError) -> Int {
            let cleaned = text.replacingOccurrences(of: "_", with: "")
            guard let n = Int(cleaned), n > 0 else {
                throw ParseError(description: "\(name) takes whole numbers > 0, not \"\(text)\"")
            }
            return n
        }
        while i < arguments.count {
            let arg = arguments[i]
            switch arg {
            case "--sizes":
                let text = try value(arg)
                var sizes: [Int] = []
                for part in text.split(separator: ",") { sizes.append(try count(part, arg)) }
                guard !sizes.isEmpty else { throw ParseError(description: "--sizes needs at least one size") }
                o.sizes = sizes
                sizesGiven = true
            case "--seed":
                let text = try value(arg)
                guard let s = UInt64(text) else { throw ParseError(description: "--seed takes a whole number, not \"\(text)\"") }
                o.seed = s
            case "--queries":
                o.queries = try count(Substring(try value(arg)), arg)
                queriesGiven = true
            case "--quick": o.quick = true
            case "--skip-durability": o.skipDurability = true
            case "--only":
                let section = try value(arg)
                let sections = ["rpc", "inprocess", "durability", "restart", "tiles", "pointtiles", "clusters", "cluster", "render", "z0", "citytiles", "densetiles", "onecity", "viewport", "clusterwork", "move", "apply", "fences", "auth", "attributes", "labels", "feed"]
                guard sections.contains(section) else {
                    throw ParseError(description: "--only takes one of \(sections.joined(separator: ", ")), not \"\(section)\"")
                }
                o.only = section
            case "--places": o.placesPath = try value(arg)
            case "--png-dir": o.pngDir = try value(arg)
            case "--mapnik-seconds": o.mapnikSeconds = try count(Substring(try value(arg)), arg)
            case "--label-zooms":
                let text = try value(arg)
                var zooms: [Int] = []
                for part in text.split(separator: ",") {
                    guard let z = Int(part), LabelBench.zooms.contains(where: { $0.z == z }) else {
                        throw ParseError(description: "--label-zooms takes zooms of \(LabelBench.zooms.map { String($0.z) }.joined(separator: ", ")), not \"\(part)\"")
                    }
                    zooms.append(z)
                }
                guard !zooms.isEmpty else { throw ParseError(description: "--label-zooms needs at least one zoom") }
                o.labelZooms = zooms
            case "--mapnik-python": o.mapnikPython = try value(arg)
            case "--report": o.reportDir = try value(arg)
            case "--no-tune": o.tuneLoad = false
            case "--markerd": o.markerdPath = try value(arg)
            case "--data-root": o.dataRoot = try value(arg)
            case "--verbose": o.verbose = true
            case "--keep-data": o.keepData = true
            default:
                throw ParseError(description: "unknown option \"\(arg)\"")
            }
            i += 1
        }
        if o.quick {
            if !sizesGiven { o.sizes = [100_000] }
            if !queriesGiven { o.queries = 300 }
        }
        return o
    }

    /// The options as one line for the table header.
    var summary: String {
        var parts = ["--sizes \(sizes.map(String.init).joined(separator: ","))", "--seed \(seed)", "--queries \(queries)"]
        if quick { parts.append("--quick") }
        if let only { parts.append("--only \(only)") }
        else if skipDurability { parts.append("--skip-durability") }
        if !tuneLoad { parts.append("--no-tune") }
        if runLabels {
            parts.append("--places \(placesPath) --mapnik-seconds \(mapnikSeconds) --mapnik-python \(mapnikPython)")
            if let pngDir { parts.append("--png-dir \(pngDir)") }
            if let labelZooms { parts.append("--label-zooms \(labelZooms.map(String.init).joined(separator: ","))") }
        }
        if let reportDir { parts.append("--report \(reportDir)") }
        parts.append("--markerd \(markerdPath)")
        if !skipDurability || runClusterMode { parts.append("--data-root \(dataRoot)") }
        return parts.joined(separator: " ")
    }
}
