#!/usr/bin/env python3
"""Renders a crate's public API from rustdoc's JSON output, one item a line, sorted.

    python3 scripts/public-api.py target/api/doc/resilix.json > api/resilix.txt

Every public item reachable from the crate root is listed under each public path it has
(re-exports included): modules, structs with their public fields, enums with their variants,
traits with their items, functions and methods with their signatures, constants, statics, type
aliases and macros; for each type, the traits it implements (derived, written or blanket impls of
our own traits; auto traits and std's blanket impls are left out, they follow from the rest).
Attributes that change what a caller may do are kept: `#[non_exhaustive]`, `#[must_use]`,
`#[deprecated]`. Doc comments and private items are not, so the file changes exactly when the
surface a user compiles against does. scripts/public-api.sh regenerates and compares it.
"""

import json
import sys

AUTO = {"Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe", "Freeze"}
BLANKET_STD = {"From", "Into", "TryFrom", "TryInto", "Any", "Borrow", "BorrowMut",
               "ToOwned", "CloneToUninit", "ToString"}


def main():
    doc = json.load(open(sys.argv[1]))
    idx = doc["index"]
    get = lambda i: idx.get(str(i))
    lines = set()

    def ty(t):
        if t is None:
            return "()"
        (k, v), = t.items()
        if k == "resolved_path":
            return v["path"].replace("$crate::", "") + args(v.get("args"))
        if k == "generic":
            return v
        if k == "primitive":
            return v
        if k == "tuple":
            return "(" + ", ".join(ty(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if k == "slice":
            return "[" + ty(v) + "]"
        if k == "array":
            return "[" + ty(v["type"]) + "; " + v["len"] + "]"
        if k == "borrowed_ref":
            lt = (v["lifetime"] + " ") if v.get("lifetime") else ""
            return "&" + lt + ("mut " if v["is_mutable"] else "") + ty(v["type"])
        if k == "raw_pointer":
            return "*" + ("mut " if v["is_mutable"] else "const ") + ty(v["type"])
        if k == "impl_trait":
            return "impl " + " + ".join(bound(b) for b in v)
        if k == "dyn_trait":
            parts = [poly(p) for p in v["traits"]]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if k == "qualified_path":
            tr = v.get("trait")
            if not tr or not tr.get("path"):
                return ty(v["self_type"]) + "::" + v["name"] + args(v.get("args"))
            inner = ty(v["self_type"]) + " as " + tr["path"] + args(tr.get("args"))
            return "<" + inner + ">::" + v["name"] + args(v.get("args"))
        if k == "function_pointer":
            sig = v["sig"]
            return "fn(" + ", ".join(ty(a[1]) for a in sig["inputs"]) + ")" + ret(sig.get("output"))
        if k == "infer":
            return "_"
        return json.dumps(t, sort_keys=True)

    def args(a):
        if not a:
            return ""
        (k, v), = a.items()
        if k == "angle_bracketed":
            parts = []
            for x in v.get("args", []):
                (ak, av), = x.items()
                parts.append(av if ak == "lifetime" else ty(av) if ak == "type"
                             else (av.get("expr") if isinstance(av, dict) else str(av)) if ak == "const" else "_")
            for c in v.get("constraints", []):
                b = c["binding"]
                if "equality" in b:
                    e = b["equality"]
                    parts.append(c["name"] + " = " + (ty(e["type"]) if "type" in e else str(e)))
                else:
                    parts.append(c["name"] + ": " + " + ".join(bound(x) for x in b.get("constraint", [])))
            return "<" + ", ".join(parts) + ">" if parts else ""
        if k == "parenthesized":
            return "(" + ", ".join(ty(x) for x in v["inputs"]) + ")" + ret(v.get("output"))
        return ""

    def ret(o):
        return "" if o is None else " -> " + ty(o)

    def poly(p):
        hr = p.get("generic_params") or []
        pre = "for<" + ", ".join(g["name"] for g in hr) + "> " if hr else ""
        return pre + p["trait"]["path"] + args(p["trait"].get("args"))

    def bound(b):
        (k, v), = b.items()
        if k == "trait_bound":
            mod = {"maybe": "?", "maybe_const": "~const "}.get(v.get("modifier"), "")
            hr = v.get("generic_params") or []
            pre = "for<" + ", ".join(g["name"] for g in hr) + "> " if hr else ""
            return pre + mod + v["trait"]["path"] + args(v["trait"].get("args"))
        if k == "outlives":
            return v
        if k == "use":
            return "use<..>"
        return json.dumps(b, sort_keys=True)

    def generics(g):
        ps = []
        for p in g.get("params", []):
            (k, v), = p["kind"].items()
            if k == "lifetime":
                ps.append(p["name"])
            elif k == "type":
                if v.get("is_synthetic"):
                    continue
                bs = " + ".join(bound(b) for b in v.get("bounds", []))
                d = (" = " + ty(v["default"])) if v.get("default") else ""
                ps.append(p["name"] + (": " + bs if bs else "") + d)
            elif k == "const":
                ps.append("const " + p["name"] + ": " + ty(v["type"]))
        return "<" + ", ".join(ps) + ">" if ps else ""

    def where(g):
        ws = []
        for w in g.get("where_predicates", []):
            (k, v), = w.items()
            if k == "bound_predicate":
                ws.append(ty(v["type"]) + ": " + " + ".join(bound(b) for b in v["bounds"]))
            elif k == "lifetime_predicate":
                ws.append(v["lifetime"] + ": " + " + ".join(v["outlives"]))
            else:
                ws.append(json.dumps(v, sort_keys=True))
        return " where " + ", ".join(ws) if ws else ""

    def attrs(item):
        out = []
        for a in item.get("attrs", []):
            s = a if isinstance(a, str) else json.dumps(a, sort_keys=True)
            for key in ("non_exhaustive", "must_use", "deprecated"):
                if key in s and key not in out:
                    out.append(key)
        if item.get("deprecation"):
            if "deprecated" not in out:
                out.append("deprecated")
        return "#[" + ", ".join(out) + "] " if out else ""

    def fn_sig(name, f):
        h = f["header"]
        q = ("const " if h["is_const"] else "") + ("async " if h["is_async"] else "") + \
            ("unsafe " if h["is_unsafe"] else "")
        ins = ", ".join(("self" if n == "self" and t == {"generic": "Self"} else
                         "&self" if n == "self" and t == {"borrowed_ref": {"lifetime": None, "is_mutable": False, "type": {"generic": "Self"}}} else
                         "&mut self" if n == "self" and t == {"borrowed_ref": {"lifetime": None, "is_mutable": True, "type": {"generic": "Self"}}} else
                         n + ": " + ty(t)) for n, t in f["sig"]["inputs"])
        return q + "fn " + name + generics(f["generics"]) + "(" + ins + ")" + \
            ret(f["sig"].get("output")) + where(f["generics"])

    def impls_of(path, ids):
        traits = []
        for i in ids:
            it = get(i)
            if not it:
                continue
            im = it["inner"]["impl"]
            if im.get("is_synthetic"):
                continue
            tr = im.get("trait")
            if tr is None:
                for m in im["items"]:
                    member(path, get(m), inherent=True)
                continue
            name = tr["path"].split("::")[-1]
            if name in AUTO or (im.get("blanket_impl") and name in BLANKET_STD):
                continue
            if im.get("blanket_impl") and get(tr["id"]) is None:
                continue
            neg = "!" if im.get("is_negative") else ""
            traits.append("impl" + generics(im["generics"]) + " " + neg + tr["path"] + args(tr.get("args")) +
                          " for " + ty(im["for"]) + where(im["generics"]))
        for t in traits:
            lines.add(path + " :: " + t)

    def member(path, it, inherent=False):
        if it is None:
            return
        if inherent and it.get("visibility") != "public":
            return
        (k, v), = it["inner"].items()
        name = it.get("name")
        if k == "function":
            lines.add(path + "::" + name + " :: " + attrs(it) + "pub " + fn_sig(name, v))
        elif k == "assoc_const":
            lines.add(path + "::" + name + " :: " + attrs(it) + "const " + name + ": " + ty(v["type"]))
        elif k == "assoc_type":
            bs = " + ".join(bound(b) for b in v.get("bounds", []))
            val = (" = " + ty(v["type"])) if v.get("type") else ""
            lines.add(path + "::" + name + " :: type " + name + generics(v["generics"]) +
                      (": " + bs if bs else "") + val)

    visited = set()
    # Every public path of each item: it is written out once, at its canonical path (outside any
    # prelude, the fewest segments, then the first by name), and every other path is a `pub use`
    # line pointing there.
    paths_of = {}

    def item(path, it):
        if it is None:
            return
        (k, v), = it["inner"].items()
        key = (path, it["id"])
        if key in visited:
            return
        visited.add(key)
        if k == "module":
            lines.add(path + " :: mod")
            for c in v["items"]:
                child(path, get(c))
            return
        paths_of.setdefault(it["id"], []).append(path)

    def expand(path, it):
        (k, v), = it["inner"].items()
        a = attrs(it)
        if k == "struct":
            kind = v["kind"]
            if "plain" in kind:
                for f in kind["plain"]["fields"]:
                    fi = get(f)
                    if fi and fi.get("visibility") == "public":
                        lines.add(path + "::" + fi["name"] + " :: pub " + fi["name"] + ": " +
                                  ty(fi["inner"]["struct_field"]))
                shape = " { .. }" if kind["plain"].get("has_stripped_fields") else " {}"
            elif "tuple" in kind:
                shape = "(" + ", ".join("_" if f is None else ty(get(f)["inner"]["struct_field"])
                                        for f in kind["tuple"]) + ")"
            else:
                shape = ";"
            lines.add(path + " :: " + a + "struct" + generics(v["generics"]) + shape + where(v["generics"]))
            impls_of(path, v["impls"])
        elif k == "enum":
            lines.add(path + " :: " + a + "enum" + generics(v["generics"]) + where(v["generics"]))
            for var in v["variants"]:
                vi = get(var)
                vk = vi["inner"]["variant"]["kind"]
                if vk == "plain":
                    shape = ""
                elif "tuple" in vk:
                    shape = "(" + ", ".join("_" if f is None else ty(get(f)["inner"]["struct_field"])
                                            for f in vk["tuple"]) + ")"
                else:
                    shape = " { " + ", ".join(get(f)["name"] + ": " + ty(get(f)["inner"]["struct_field"])
                                              for f in vk["struct"]["fields"]) + " }"
                lines.add(path + "::" + vi["name"] + " :: " + attrs(vi) + "variant" + shape)
            impls_of(path, v["impls"])
        elif k == "union":
            lines.add(path + " :: union")
            impls_of(path, v["impls"])
        elif k == "trait":
            sup = " + ".join(bound(b) for b in v.get("bounds", []))
            lines.add(path + " :: " + a + ("unsafe " if v["is_unsafe"] else "") + "trait" +
                      generics(v["generics"]) + (": " + sup if sup else "") + where(v["generics"]))
            for m in v["items"]:
                member(path, get(m))
        elif k == "function":
            lines.add(path + " :: " + a + "pub " + fn_sig(it["name"], v))
        elif k == "type_alias":
            lines.add(path + " :: type" + generics(v["generics"]) + " = " + ty(v["type"]))
        elif k == "constant":
            lines.add(path + " :: const: " + ty(v["type"]))
        elif k == "static":
            lines.add(path + " :: static: " + ty(v["type"]))
        elif k in ("macro", "proc_macro"):
            lines.add(path + " :: macro")
        elif k == "trait_alias":
            lines.add(path + " :: trait alias")

    def child(prefix, it):
        if it is None or it.get("visibility") != "public":
            return
        (k, v), = it["inner"].items()
        if k == "use":
            target = get(v["id"]) if v.get("id") is not None else None
            if v["is_glob"]:
                if target and "module" in target["inner"]:
                    for c in target["inner"]["module"]["items"]:
                        child(prefix, get(c))
                elif target and "enum" in target["inner"]:
                    lines.add(prefix + "::* :: pub use " + v["source"] + "::*")
                else:
                    lines.add(prefix + "::* :: pub use " + v["source"] + "::*")
                return
            if target is None:
                lines.add(prefix + "::" + v["name"] + " :: pub use " + v["source"])
                return
            item(prefix + "::" + v["name"], target)
            return
        if it.get("name") is None:
            return
        item(prefix + "::" + it["name"], it)

    root = get(doc["root"])
    item(root["name"], root)
    for i, paths in paths_of.items():
        paths.sort(key=lambda p: ("::prelude::" in p, p.count("::"), p))
        expand(paths[0], get(i))
        for p in paths[1:]:
            lines.add(p + " :: pub use " + paths[0])
    for line in sorted(x.replace("$crate::", "") for x in lines):
        print(line)


if __name__ == "__main__":
    main()
