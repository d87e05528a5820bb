import re
TOK = re.compile(r'//[^\n]*|"[^"]*"|[A-Za-z_][A-Za-z0-9_.]*|0x[0-9A-Fa-f]+|-?\d+(?:\.\d+)?|[{}\[\];=<>,()]|\n')

def tokenize(text):
    line = 1
    out = []
    for m in TOK.finditer(text):
        t = m.group(0)
        if t == '\n': line += 1; continue
        out.append((t, line))
    return out

class Field:
    def __init__(s, **kw): s.__dict__.update(kw)
class Message:
    def __init__(s, name, comment, section):
        s.name, s.comment, s.section, s.fields, s.oneofs = name, comment, section, [], []
class Enum:
    def __init__(s, name, comment, section):
        s.name, s.comment, s.section, s.values = name, comment, section, []

def parse(path):
    toks = tokenize(open(path).read())
    i = 0
    items = []
    section = None
    pending = []   # pending comment lines
    last_semicolon_line = -1
    last_decl = None
    sep_seen = False
    def take():
        nonlocal i
        t = toks[i]; i += 1; return t
    def comment_text(t):
        return t[2:].strip() if t[2:3] == ' ' or True else t
    stack = []  # (kind, obj)
    cur_oneof = None
    while i < len(toks):
        t, ln = take()
        if t.startswith('//'):
            txt = t[2:]
            if txt.startswith(' '): txt = txt[1:]
            if re.fullmatch(r'-{10,}', txt.strip()):
                sep_seen = True; pending = []; continue
            if sep_seen and not stack:
                section = txt.strip(); sep_seen = False; pending = []; continue
            if ln == last_semicolon_line and last_decl is not None:
                last_decl.comment = (last_decl.comment + [txt]) if last_decl.comment else [txt]
                continue
            pending.append(txt); continue
        if t in ('syntax', 'package', 'import', 'reserved'):
            while toks[i][0] != ';': i += 1
            i += 1; pending = []; continue
        if t == 'service':
            depth = 0
            while True:
                tt, _ = take()
                if tt == '{': depth += 1
                if tt == '}':
                    depth -= 1
                    if depth == 0: break
            pending = []; continue
        if t == 'enum':
            name, _ = take(); take()  # {
            e = Enum(name, pending, section); pending = []
            while True:
                tt, l2 = take()
                if tt == '}': break
                if tt.startswith('//'):
                    pending.append(tt[3:] if tt.startswith('// ') else tt[2:]); continue
                take(); num, _ = take(); take()
                e.values.append((tt, int(num), pending)); pending = []
            items.append(e); continue
        if t == 'message':
            name, _ = take(); take()
            m = Message(name, pending, section); pending = []
            stack.append(m); items.append(m); last_decl = None; continue
        if t == 'oneof':
            name, _ = take(); take()
            cur_oneof = (name, pending); stack[-1].oneofs.append((name, pending)); pending = []; continue
        if t == '}':
            if cur_oneof: cur_oneof = None
            else: stack.pop()
            continue
        # field
        label = None
        if t in ('optional', 'repeated'):
            label = t; t, ln = take()
        if t == 'map':
            take(); kt, _ = take(); take(); vt, _ = take(); take()
            ftype = ('map', kt, vt)
        else:
            ftype = t
        fname, _ = take(); take(); num, _ = take()
        default = None
        tt, l3 = take()
        if tt == '[':
            take(); take(); default, _ = take(); take(); tt, l3 = take()
        assert tt == ';', (tt, fname)
        f = Field(name=fname, number=int(num), label=label or ('oneof' if cur_oneof else 'map'),
                  type=ftype, default=default, comment=pending, oneof=cur_oneof[0] if cur_oneof else None)
        pending = []
        stack[-1].fields.append(f)
        last_semicolon_line = l3; last_decl = f
    return items
