// markerd: the map-marker server. See README.md and `markerd --help`.
import Foundation
import MarkerdServer

let arguments = Array(CommandLine.arguments.dropFirst())

func die(_ message: String, code: Int32 = 1) -> Never {
    FileHandle.standardError.write("markerd: \(message)\n".data(using: .utf8)!)
    exit(code)
}

if arguments.first != "token" && (arguments.contains("-h") || arguments.contains("--help")) {
    print(MarkerdConfiguration.usage)
    exit(0)
}
if arguments.first == "--version" {
    print("markerd \(MarkerdVersion.string)")
    exit(0)
}
if arguments.first == "token" {
    exit(TokenTool.run(Array(arguments.dropFirst())))
}
if let sub = arguments.first, sub == "check" || sub == "repair" {
    guard arguments.count == 2 else { die("usage: markerd \(sub) DIR", code: 2) }
    exit(DataDirectoryTool.run(sub, directory: arguments[1]))
}

let configuration: MarkerdConfiguration
do {
    configuration = try MarkerdConfiguration.parse(arguments)
} catch {
    die("\(error)\n\n\(MarkerdConfiguration.usage)", code: 2)
}

// Large blocks in their own mappings, so freed request buffers and column generations leave RSS.
MallocTuning.apply()

let server: MarkerdNode
do {
    server = try MarkerdNode(configuration: configuration) { line in
        line.hasPrefix("recovery warning:") || line.hasPrefix("journal warning:") ? Log.warning(line) : Log.info(line)
    }
    try server.start()
} catch {
    die("cannot start: \(error)")
}
Log.info("markerd listening", ["version": MarkerdVersion.string, "urls": server.boundURLs.joined(separator: ","),
                               "data_dir": configuration.ephemeral ? "(ephemeral)" : configuration.dataDirectory,
                               "fsync": configuration.fsync.flag, "contexts": configuration.contexts,
                               "http": server.httpURL ?? "off", "https": server.httpsURL ?? "off",
                               "publish": server.publishURLs.isEmpty ? "off" : server.publishURLs.joined(separator: ",")])

// SIGTERM / SIGINT: stop taking requests, finish those in flight, flush, exit 0.
server.runUntilSignalled()
