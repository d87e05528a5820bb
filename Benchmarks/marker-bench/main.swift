// marker-bench: markerd's speed and memory targets, measured through its RPC against a real
// markerd process, each latency next to a bare-NNG floor measured in the same run.
// See Benchmarks/README.md and `marker-bench --help`.
import Dispatch
import Foundation
import MarkerdTransport

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--echo-server" {
    Floor.runEchoServer(tls: arguments.count == 3 ? TLSServerFiles(certificateFile: arguments[1], keyFile: arguments[2]) : nil)
}
if arguments.contains("-h") || arguments.contains("--help") {
    print(Options.usage)
    exit(0)
}
let options: Options
do {
    options = try Options.parse(arguments)
} catch {
    FileHandle.standardError.write("marker-bench: \(error)\n\n\(Options.usage)\n".data(using: .utf8)!)
    exit(2)
}
if let dir = options.reportDir {
    do { try Report.prepare(dir) } catch {
        FileHandle.standardError.write("marker-bench: --report \(dir): \(error)\n".data(using: .utf8)!)
        exit(2)
    }
}

// Ctrl-C / SIGTERM: stop the markerd and echo children before leaving.
signal(SIGINT, SIG_IGN)
signal(SIGTERM, SIG_IGN)
/// The SIGINT and SIGTERM handler. It runs on a dispatch queue, so it is a function and not a
/// closure written here: a closure in top-level code is main-actor isolated, and Swift 6 traps
/// ("Illegal instruction") when one runs off the main thread, before any child is stopped.
func stopChildrenAndExit() {
    Progress.log("interrupted: stopping child processes")
    ChildProcess.killAll()
    exit(130)
}
let signalSources = [SIGINT, SIGTERM].map { sig in
    let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
    source.setEventHandler(handler: stopChildrenAndExit)
    source.resume()
    return source
}

func runAll() throws -> Table {
    let table = Table()
    if options.runOneCity {
        try OneCityBench(seed: options.seed, table: table).run()
        return table
    }
    if options.runLabels {
        for n in options.sizes { try LabelBench(options: options, count: n, table: table).run() }
        return table
    }
    if options.runAuth {
        try AuthBench(table: table).run()
        if options.only == "auth" { return table }
    }
    let echoBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
    let floor = try Floor.Client(executable: echoBinary, echo: options.verbose)
    defer { floor.stop() }
    if options.runFeed {
        try FeedBench(options: options, floor: floor, table: table).run()
        try FeedLoadBench(options: options, table: table).run()
        return table
    }
    for n in options.sizes {
        Progress.log("[\(Table.count(n))] building the synthetic layer (seed \(options.seed))")
        let layer = SyntheticLayer(count: n, seed: options.seed)
        let markers = layer.apiMarkers()
        Progress.log("[\(Table.count(n))] \(layer.draggable.count) draggable markers, ids average \(Table.fixed(layer.averageIDBytes, 2)) B")
        if options.runRPC {
            try RPCBench(options: options, layer: layer, markers: markers, floor: floor, table: table).run()
        }
        if options.runTiles { try TileBench(options: options, layer: layer, markers: markers, floor: floor, table: table).run() }
        if options.runPointTiles { try PointTileBench(options: options, layer: layer, markers: markers, floor: floor, table: table).run() }
        if options.runAttributes { try AttributeBench(options: options, layer: layer, markers: markers, table: table).run() }
        if options.runCityTiles { try CityTileBench(options: options, layer: layer, table: table).run() }
        if options.runDenseTiles { try DenseTileBench(options: options, layer: layer, table: table).run() }
        if options.runInProcess { try InProcessBench(options: options, layer: layer, table: table).run() }
        if options.runApply { try ApplyBench(layer: layer, table: table).run() }
        if options.runFences { try FenceBench(options: options, layer: layer, table: table).run() }
        if !options.skipDurability {
            try DurabilityBench(options: options, layer: layer, markers: markers, table: table).run()
        }
        if options.runViewport { try ViewportBench(options: options, layer: layer, markers: markers, table: table).run() }
        if options.runClusterWork { try ClusterWorkBench(options: options, layer: layer, markers: markers, table: table).run() }
        if options.runClusters { try ClusterBench(options: options, layer: layer, markers: markers, floor: floor, table: table).run() }
        if options.runClusterMode { try ClusterModeBench(options: options, layer: layer, markers: markers, table: table).run() }
    }
    return table
}

let started = Date()
let loadAverageAtStart = Machine.loadAverage ?? 0
let freshMemoryAtStart = Machine.freshMemoryRate()
let table: Table
do {
    table = try runAll()
} catch {
    Progress.log("marker-bench failed: \(error)")
    ChildProcess.killAll()
    exit(1)
}

let dateFormatter = ISO8601DateFormatter()
let gib = Double(Machine.memoryBytes) / Double(1 << 30)
let machineLine = "\(Machine.processors) cores (nproc), \(String(format: "%.1f", gib)) GiB memory, \(Machine.cpuModel), Linux \(Machine.kernel)"
let markdown = """
## marker-bench \(dateFormatter.string(from: started))

- machine: \(machineLine)
- options: \(options.summary)
- this process's heap (the in-process rows): \(Machine.heapPages); at the end AnonHugePages \(Table.bytes(Int(Machine.anonHugePagesBytes(pid: getpid()) ?? 0))) of VmRSS \(Table.bytes(Int(Machine.residentBytes(pid: getpid()) ?? 0)))
- fresh memory (256 MiB newly mapped and written, huge pages advised) faulted in at \(freshMemoryAtStart.map { String(format: "%.2f", $0) } ?? "?") GB/s at the start, \(Machine.freshMemoryRate().map { String(format: "%.2f", $0) } ?? "?") GB/s at the end (on this Firecracker VM 0.2-0.8 GB/s was seen for memory the guest had not used recently, 2.3-5.8 GB/s for memory just freed; loads and renders that grow the heap slow down with it)
- 1-minute load average \(String(format: "%.1f", loadAverageAtStart)) at the start, \(String(format: "%.1f", Machine.loadAverage ?? 0)) at the end (a shared machine: wall-clock rates move with it; CPU µs/marker and the floor ratios much less)
- took \(String(format: "%.0f", Date().timeIntervalSince(started))) s. Latencies run from the encoded request handed to NNG to the reply bytes back (round trip + server work; the client's protobuf encode + decode is in the note), one call in flight; \
each is compared with the bare NNG round trip of the same request/reply sizes measured in the same run ("Ratio" = p50x / p99x). \
Status PASS/MISS applies at the target's size; "(... at this size)" is indicative only.

\(table.markdown())
"""
print(markdown)
if let dir = options.reportDir {
    do {
        try Report.write(markdown: markdown,
                         document: Report.Document(started: dateFormatter.string(from: started), machine: machineLine,
                                                   options: options.summary, rows: table.rows),
                         dir: dir, plotScript: options.plotScript)
    } catch {
        Progress.log("marker-bench: --report: \(error)")
        exit(1)
    }
}
withExtendedLifetime(signalSources) {}
