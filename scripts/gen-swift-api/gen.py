#!/usr/bin/env python3
"""Generates Sources/MarkerdAPI/Generated/V1+*.swift (Swift value types over protobuf-c) from Protos/.

    python3 scripts/gen-swift-api/gen.py            rewrite Sources/MarkerdAPI/Generated/V1+*.swift
    python3 scripts/gen-swift-api/gen.py OUT_DIR    write the files into OUT_DIR (freshness test)
"""
import os, re, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parse

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
OUT = sys.argv[1] if len(sys.argv) > 1 else f'{ROOT}/Sources/MarkerdAPI/Generated'
main = parse.parse(f'{ROOT}/Protos/markerd/v1/markerd.proto')
storage = parse.parse(f'{ROOT}/Protos/markerd/v1/storage.proto')
for it in storage: it.section = 'Storage'
for it in main:
    if it.section is None: it.section = 'Envelope'
items = main + storage
messages = {it.name: it for it in items if isinstance(it, parse.Message)}
enums = {it.name: it for it in items if isinstance(it, parse.Enum)}

PRESENCE_MESSAGES = {'DefaultPin', 'TilingOptions', 'ClusteringOptions', 'LabelOptions', 'MarkerLabel', 'SnapshotHeader', 'SnapshotFooter', 'IdempotencyEntry'}
SCALAR = {'double': 'Double', 'float': 'Float', 'int32': 'Int32', 'int64': 'Int64', 'uint32': 'UInt32',
          'uint64': 'UInt64', 'bool': 'Bool', 'string': 'String', 'bytes': '[UInt8]'}
KEYWORDS = {'internal', 'default', 'extension', 'protocol', 'import', 'public', 'private', 'static', 'class',
            'struct', 'enum', 'case', 'func', 'var', 'let', 'in', 'is', 'as', 'self', 'repeat', 'return'}
FILES = {
    'Envelope': ('V1+Envelope.swift', 'The RPC envelope (`Request`, `Response`) and status codes.'),
    'Geometry': ('V1+Geometry.swift', 'Geometry: points, rectangles and icon anchors.'),
    'Layers': ('V1+Layers.swift', 'Layers: options, tiling mode, stats and the layer RPCs.'),
    'Icons': ('V1+Icons.swift', 'Icons: the default pin and registered PNG icons.'),
    'Markers': ('V1+Markers.swift', 'Markers and the marker RPCs.'),
    'Spatial queries': ('V1+Queries.swift', 'Spatial queries: viewport and hit-test.'),
    'Drags': ('V1+Drags.swift', 'Drags: begin, move, end, cancel.'),
    'Raster tiles and snapshots': ('V1+Tiles.swift', 'Raster tiles and map snapshots.'),
    'Clustering': ('V1+Clusters.swift', 'Clustering: clusters, leaves, children, expansion zoom.'),
    'Point-data (vector) tiles': ('V1+PointTiles.swift', 'Point-data (Mapbox Vector) tiles.'),
    'Change feed': ('V1+ChangeFeed.swift', 'The change feed (--publish) and catch-up by version (GetChanges).'),
    'Geofences': ('V1+Geofences.swift', 'Geofences: shapes, filters, webhooks, events and the fence RPCs.'),
    'Administration': ('V1+Admin.swift', 'Administration: snapshots, server info and signed tile URLs.'),
    'Storage': ('V1+Storage.swift', 'On-disk formats (storage.proto): journal records and snapshot sections. Not part of the RPC API.'),
}

def camel(name):
    parts = name.split('_')
    out = []
    for i, p in enumerate(parts):
        if i == 0:
            out.append(p)
        elif p == 'id': out.append('ID')
        elif p == 'ids': out.append('IDs')
        else: out.append(p[:1].upper() + p[1:])
    return ''.join(out)

def esc(n): return f'`{n}`' if n in KEYWORDS else n

def snake(name): return re.sub(r'(?<=[a-z0-9])([A-Z])', r'_\1', name).lower()
def ctype(m): return 'Markerd__V1__' + m
def cfunc(m): return 'markerd__v1__' + snake(m)

def enum_case(e, vname):
    prefix = snake(e.name).upper() + '_'
    if e.name != 'Code' and vname.startswith(prefix): vname = vname[len(prefix):]
    return camel(vname.lower())

def kind(msg, f):
    """(swift type, kind) kind in plain/optional/message/repeated/map/oneof"""
    if isinstance(f.type, tuple): return '[String: String]', 'map'
    base = SCALAR.get(f.type, f.type)
    if f.label == 'repeated': return f'[{base}]', 'repeated'
    if f.oneof: return base, 'oneof'
    if f.type in messages: return base + '?', 'message'
    if f.default is not None or msg.name in PRESENCE_MESSAGES: return base + '?', 'optional'
    return base, 'plain'

def zero(t):
    return {'String': '""', '[UInt8]': '[]', 'Bool': 'false'}.get(t, '0') if t in SCALAR.values() else None

def swift_default_literal(f):
    d = f.default
    return d

def doc(lines, indent):
    return ''.join(f'{indent}/// {l}'.rstrip() + '\n' for l in lines)

def field_doc(msg, f):
    lines = list(f.comment or [])
    t, k = kind(msg, f)
    if f.default is not None:
        lines.append(f'nil: absent, meaning the default {f.default} (`default{camel(f.name)[:1].upper()+camel(f.name)[1:]}`).')
    elif k == 'plain':
        z = zero(t) if t in SCALAR.values() else f'.{enum_case(enums[f.type], enums[f.type].values[0][0])}'
        lines.append(f'Proto field `{f.name}` = {f.number}; absent decodes to {z}, which is not encoded.')
        return lines
    lines.append(f'Proto field `{f.name}` = {f.number}.')
    return lines

def gen_enum(e, out):
    out.append(doc(e.comment or [f'The proto enum `{e.name}`.'], '    '))
    out.append(f'    public enum {e.name}: Int32, Sendable, CaseIterable {{\n')
    for vname, num, com in e.values:
        out.append(doc(com, '        '))
        out.append(f'        case {esc(enum_case(e, vname))} = {num}\n')
    out.append('\n        /// The canonical proto name, e.g. "%s".\n' % e.values[min(3, len(e.values)-1)][0])
    out.append('        public var name: String {\n            switch self {\n')
    for vname, num, com in e.values:
        out.append(f'            case .{enum_case(e, vname)}: "{vname}"\n')
    out.append('            }\n        }\n    }\n')

def gen_struct(m, out):
    out.append(doc(m.comment or [f'The proto message `{m.name}`.'], '    '))
    out.append(f'    public struct {m.name}: ProtoMessage {{\n')
    # oneof enums
    for oname, ocom in m.oneofs:
        ename = oname[:1].upper() + oname[1:]
        out.append(doc(ocom or [f'The proto oneof `{oname}`.'], '        '))
        out.append(f'        public enum {ename}: Sendable, Equatable {{\n')
        for f in m.fields:
            if f.oneof == oname:
                out.append(doc((f.comment or []) + [f'Proto field `{f.name}` = {f.number}.'], '            '))
                out.append(f'            case {camel(f.name)}({SCALAR.get(f.type, f.type)})\n')
        out.append('        }\n\n')
    # defaults
    defaults = [f for f in m.fields if f.default is not None]
    for f in defaults:
        t = SCALAR[f.type]
        out.append(f'        /// The proto default of `{camel(f.name)}`.\n')
        out.append(f'        public static let default{camel(f.name)[:1].upper()+camel(f.name)[1:]}: {t} = {f.default}\n')
    if defaults: out.append('\n')
    # properties
    params = []
    seen_oneof = set()
    for f in m.fields:
        t, k = kind(m, f)
        if k == 'oneof':
            if f.oneof in seen_oneof: continue
            seen_oneof.add(f.oneof)
            ename = f.oneof[:1].upper() + f.oneof[1:]
            out.append(f'        /// One of the `{f.oneof}` cases; nil when none is set.\n')
            out.append(f'        public var {f.oneof}: {ename}? = nil\n')
            params.append((f.oneof, ename + '?', 'nil'))
            continue
        name = camel(f.name)
        init = {'message': 'nil', 'optional': 'nil', 'repeated': '[]', 'map': '[:]'}.get(k)
        if init is None:
            init = zero(t) if t in SCALAR.values() else f'.{enum_case(enums[t], enums[t].values[0][0])}'
        out.append(doc(field_doc(m, f), '        '))
        out.append(f'        public var {name}: {t} = {init}\n')
        params.append((name, t, init))
    out.append('\n        public init() {}\n')
    if params:
        out.append('\n        public init(\n')
        out.append(',\n'.join(f'            {n}: {t} = {v}' for n, t, v in params))
        out.append('\n        ) {\n')
        for n, t, v in params: out.append(f'            self.{n} = {n}\n')
        out.append('        }\n')
    out.append('    }\n')

def gen_bridge(m, out):
    ct = ctype(m.name); cf = cfunc(m.name)
    out.append(f'extension V1.{m.name}: CBridged {{\n')
    out.append(f'    static var protoName: String {{ "{m.name}" }}\n\n')
    out.append('    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {\n')
    out.append(f'        UnsafeRawPointer({cf}__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))\n    }}\n\n')
    # decode
    if m.fields:
        out.append('    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {\n')
        out.append(f'        let c = cMessage.load(as: {ct}.self)\n')
    else:
        out.append('    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {\n        self.init()\n')
    done_oneof = set()
    args = []
    for f in m.fields:
        t, k = kind(m, f); n = camel(f.name); cn = f.name; fq = f'"{m.name}.{f.name}"'
        base = f.type if not isinstance(f.type, tuple) else None
        if k == 'oneof':
            if f.oneof in done_oneof: continue
            done_oneof.add(f.oneof)
            out.append(f'        var {f.oneof}: {f.oneof[:1].upper() + f.oneof[1:]}? = nil\n        switch c.{f.oneof}_case {{\n')
            for g in m.fields:
                if g.oneof != f.oneof: continue
                const = f'MARKERD__V1__{snake(m.name).upper()}__{f.oneof.upper()}_{g.name.upper()}'
                gn = camel(g.name)
                if g.type in messages:
                    out.append(f'        case {const}:\n            if let value: V1.{g.type} = try swiftMessage(c.{g.name}) {{ {f.oneof} = .{gn}(value) }}\n')
                elif g.type == 'string':
                    out.append(f'        case {const}:\n            {f.oneof} = .{gn}(try swiftString(c.{g.name}, "{m.name}.{g.name}"))\n')
                else: raise Exception(g.type)
            out.append('        default:\n            break\n        }\n')
            continue
        if k == 'map':
            args.append((n, f'try swiftStringMap(c.n_{cn}, c.{cn})')); continue
        if k == 'repeated':
            if base == 'string': args.append((n, f'try swiftStrings(c.n_{cn}, c.{cn}, {fq})'))
            elif base in enums: args.append((n, f'swiftEnums(c.n_{cn}, c.{cn})'))
            else: args.append((n, f'try swiftMessages(c.n_{cn}, c.{cn})'))
            continue
        if k == 'message':
            args.append((n, f'try swiftMessage(c.{cn})')); continue
        isenum = base in enums
        if k == 'plain':
            if base == 'string': e = f'try swiftString(c.{cn}, {fq})'
            elif base == 'bytes': e = f'swiftBytes(c.{cn}.data, c.{cn}.len)'
            elif base == 'bool': e = f'c.{cn} != 0'
            elif isenum: e = f'swiftEnum(c.{cn})'
            else: e = f'c.{cn}'
        else:
            if base == 'string': e = f'try swiftOptionalString(c.{cn}, {fq})'
            elif base == 'bytes': e = f'c.has_{cn} != 0 ? swiftBytes(c.{cn}.data, c.{cn}.len) : nil'
            elif isenum: e = f'swiftOptionalEnum(c.has_{cn}, c.{cn})'
            else: e = f'present(c.has_{cn}, c.{cn})'
        args.append((n, e))
    if m.fields:
        ordered = []
        seen = set()
        for f in m.fields:
            if f.oneof:
                if f.oneof not in seen: seen.add(f.oneof); ordered.append((f.oneof, f.oneof))
            else:
                ordered.append(next(a for a in args if a[0] == camel(f.name)))
        out.append('        self.init(\n' + ',\n'.join(f'            {n}: {e}' for n, e in ordered) + '\n        )\n')
    out.append('    }\n\n')
    # encode
    out.append('    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {\n')
    out.append(f'        var c = {ct}()\n        {cf}__init(&c)\n')
    done_oneof = set()
    for f in m.fields:
        t, k = kind(m, f); n = camel(f.name); cn = f.name
        base = f.type if not isinstance(f.type, tuple) else None
        if k == 'oneof':
            if f.oneof in done_oneof: continue
            done_oneof.add(f.oneof)
            out.append(f'        switch self.{f.oneof} {{\n')
            for g in m.fields:
                if g.oneof != f.oneof: continue
                const = f'MARKERD__V1__{snake(m.name).upper()}__{f.oneof.upper()}_{g.name.upper()}'
                gn = camel(g.name)
                val = 'arena.message(value)' if g.type in messages else 'arena.cString(present: value)'
                out.append(f'        case .{gn}(let value)?:\n            c.{f.oneof}_case = {const}\n            c.{g.name} = {val}\n')
            out.append('        case nil:\n            break\n        }\n')
            continue
        if k == 'map':
            out.append(f'        (c.n_{cn}, c.{cn}) = arena.stringMap(self.{n})\n'); continue
        if k == 'repeated':
            fn = 'strings' if base == 'string' else 'enums' if base in enums else 'messages'
            out.append(f'        (c.n_{cn}, c.{cn}) = arena.{fn}(self.{n})\n'); continue
        if k == 'message':
            out.append(f'        c.{cn} = arena.message(self.{n})\n'); continue
        if base == 'string':
            out.append(f'        c.{cn} = arena.cString(self.{n})\n'); continue
        if base == 'bytes':
            cond = f'!self.{n}.isEmpty' if k == 'plain' else f'let {n} = self.{n}'
            v = f'self.{n}' if k == 'plain' else n
            out.append(f'        if {cond} {{\n            c.has_{cn} = 1\n            c.{cn} = ProtobufCBinaryData(len: {v}.count, data: arena.bytes({v}))\n        }}\n'); continue
        fn = 'setPlain' if k == 'plain' else 'setOptional'
        out.append(f'        {fn}(self.{n}, &c.has_{cn}, &c.{cn})\n')
    out.append('        return UnsafeMutableRawPointer(arena.store(c))\n    }\n}\n')

def gen_enum_bridge(e, out):
    fb = 'unknown' if e.name == 'Code' else enum_case(e, e.values[0][0])
    out.append(f'extension V1.{e.name}: ProtoEnum {{\n    /// Unknown numbers on the wire decode to `.{fb}`.\n    static var fallback: Self {{ .{fb} }}\n}}\n')

extra = {}
extra['Markers'] = '''
// MARK: - map<string, string> attributes

/// Decodes `Marker.attributes`; a repeated key keeps the last value (proto semantics).
private func swiftStringMap(_ count: Int, _ entries: UnsafeMutablePointer<UnsafeMutablePointer<Markerd__V1__Marker__AttributesEntry>?>?) throws(InvalidUTF8) -> [String: String] {
    guard count > 0, let entries else { return [:] }
    var map: [String: String] = [:]
    map.reserveCapacity(count)
    for i in 0..<count {
        guard let entry = entries[i]?.pointee else { continue }
        map[try swiftString(entry.key, "Marker.attributes.key")] = try swiftString(entry.value, "Marker.attributes.value")
    }
    return map
}

extension Arena {
    /// Encodes `Marker.attributes` with keys in ascending byte order, so the bytes are deterministic.
    /// Key and value are always written, as other protobuf implementations do for map entries.
    fileprivate func stringMap(_ map: [String: String]) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<Markerd__V1__Marker__AttributesEntry>?>?) {
        if map.isEmpty { return (0, nil) }
        let keys = map.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let array = allocate(keys.count * MemoryLayout<UnsafeMutableRawPointer>.stride, alignment: 8)
            .bindMemory(to: UnsafeMutablePointer<Markerd__V1__Marker__AttributesEntry>?.self, capacity: keys.count)
        for (i, key) in keys.enumerated() {
            var entry = Markerd__V1__Marker__AttributesEntry()
            markerd__v1__marker__attributes_entry__init(&entry)
            entry.key = cString(present: key)
            entry.value = cString(present: map[key]!)
            array[i] = store(entry)
        }
        return (keys.count, array)
    }
}
'''

by_file = {}
for it in items:
    by_file.setdefault(it.section, []).append(it)
for section, its in by_file.items():
    fname, desc = FILES[section]
    proto = 'storage' if section == 'Storage' else 'markerd'
    out = [f'// GENERATED by scripts/gen-protos.sh (scripts/gen-swift-api/gen.py) from Protos/markerd/v1/{proto}.proto. Do not edit.\n'
           f'// {fname}: {desc}\n// Types mirror Protos/markerd/v1/{proto}.proto; see `V1` for the field conventions.\n',
           'private import CMarkerdProto\nprivate import CProtobufC\n\nextension V1 {\n']
    first = True
    for it in its:
        if not first: out.append('\n')
        first = False
        if isinstance(it, parse.Enum): gen_enum(it, out)
        else: gen_struct(it, out)
    out.append('}\n\n// MARK: - protobuf-c bridging\n')
    for it in its:
        out.append('\n')
        if isinstance(it, parse.Enum): gen_enum_bridge(it, out)
        else: gen_bridge(it, out)
    out.append(extra.get(section, ''))
    open(f'{OUT}/{fname}', 'w').write(''.join(out))
    print('wrote', fname)
