"""Census of imported projection classes (mech75): user classes whose q/k/v, gate/up or fc->act candidates
(`linear_like_census._families`, deliberately broad) call a class imported from a module that is not torch's,
each such class read in its own file (stdlib `ast`, never imported) and judged by `crossfile.linear_forward`.

    PYTHONPATH=$PWD/server nice -n 10 .venv/bin/python bench/imported_linear_census.py OUT   # rows.json in OUT

Corpora and the held-out exclusion are `gated_norm_census.corpus_files(held_out_names())`'s (held-out
distributions skipped by name, never opened). A row per user class: its candidate families (`fams`), those
over Linear-like imported classes (`fams_ll`), and each imported projection's verdict ("linear-like",
"linear-subclass-no-forward", "other-class", "not-a-class", "unresolved": not found in the corpus).
"""
import ast
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gated_norm_census as corpora
import linear_like_census as llc
from adopter.analysis.crossfile.ast_files import imports_of, qualify, toplevel_of
from adopter.analysis.crossfile.linear_forward import _order, linear_forward

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
files = {}   # (ns, path) -> bytes: definition files and re-exporting __init__s only
pkg_of = {}
users = []  # (ns, path, package, candidate classes)
def user_classes(tree, imp):
    out = []
    for c in ast.walk(tree):
        if not isinstance(c, ast.ClassDef):
            continue
        ms = llc._methods(c)
        if "__init__" not in ms or "forward" not in ms:
            continue
        sub = {}
        for attr, values in llc._self_assigns(ms["__init__"]).items():
            for v in values:
                if not isinstance(v, ast.Call):
                    continue
                f = v.func
                dotted = None
                if isinstance(f, ast.Name):
                    dotted = f.id
                elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                    dotted = f"{f.value.id}.{f.attr}"
                if dotted is None:
                    continue
                q = qualify(dotted, imp)
                if (q == dotted and "." not in dotted) or q.startswith("torch") or not q.split(".")[-1][:1].isupper():
                    continue
                if q == dotted and "." in dotted and dotted.split(".")[0] not in imp:
                    continue
                sub[attr] = q
        if not sub:
            continue
        fams = llc._families(ms["forward"], set(sub))
        if fams:
            out.append((c.name, c.lineno, sub, sorted(fams), ast.unparse(ms["forward"])))
    return out
n = 0
for package, path, data in corpora.corpus_files(corpora.held_out_names()):
    if b"torch" not in data and not path.endswith("__init__.py"):
        continue
    n += 1
    folder = package.split(":")[0]
    ns = folder if folder in ("fresh", "fresh2") else package
    pkg_of[(ns, path)] = package
    if path.endswith("__init__.py") or (b"def forward" in data and (b"linear" in data or b"matmul" in data or b"@" in data)):
        files[(ns, path)] = data
    else:
        files[(ns, path)] = b""
    if b"def forward" in data:
        try:
            tree = ast.parse(data)
        except Exception:
            continue
        found = user_classes(tree, imports_of(tree))
        if found:
            users.append((ns, path, package, found))
print(n, "files", len(users), "user files", file=sys.stderr)
index = collections.defaultdict(list)  # (ns, dotted) -> paths
for ns, path in files:
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    for i in range(len(parts)):
        index[(ns, ".".join(parts[i:]))].append(path)
parsed = {}
def parse(key):
    if key not in parsed:
        try:
            if not files[key]:
                raise ValueError
            t = ast.parse(files[key])
            parsed[key] = (t, imports_of(t), toplevel_of(t))
        except Exception:
            parsed[key] = None
    return parsed[key]

def locate(ns, module, from_path):
    if module.startswith("."):
        dots = len(module) - len(module.lstrip("."))
        base = from_path.split("/")[:-1]
        if dots > 1:
            base = base[:-(dots - 1)] if dots - 1 <= len(base) else None
        if base is None:
            return None
        rest = module[dots:]
        cand = "/".join(base + (rest.split(".") if rest else []))
        for p in (cand + ".py", cand + "/__init__.py"):
            if (ns, p) in files:
                return p
        return None
    paths = index.get((ns, module), [])
    if not paths:
        return None
    # prefer the path whose full dotted form ends with the module at a root (shortest)
    return sorted(paths, key=len)[0]

def define(ns, target, from_path, hops=0):
    """target: qualified `m.N` as imported in from_path -> (path, ClassDef/other)"""
    module, _, leaf = target.rpartition(".")
    if not module or hops > 4:
        return None
    p = locate(ns, module, from_path)
    if p is None:
        return None
    r = parse((ns, p))
    if r is None:
        return None
    _tree, imp, top = r
    node = top.get(leaf)
    if node is not None:
        return p, node
    if leaf in imp:
        return define(ns, imp[leaf], p, hops + 1)
    return None

rows = []
verdict_of = {}
for ns, path, package, found in users:
    for cname, line, sub, fams, ftext in found:
        used = {}
        for attr, q in sub.items():
            key = (ns, q, path if q.startswith(".") else "")
            if key not in verdict_of:
                d = define(ns, q, path)
                if d is None:
                    verdict_of[key] = ("unresolved", None)
                else:
                    p, node = d
                    if not isinstance(node, ast.ClassDef):
                        verdict_of[key] = ("not-a-class", p)
                    else:
                        _, imp2, top2 = parse((ns, p))
                        def qf(d, imp2=imp2):
                            return qualify(d, imp2)
                        o = _order(node, top2, qf)
                        has_fwd = o is not None and any(isinstance(m, ast.FunctionDef) and m.name == "forward" for cl in o[0] for m in cl.body)
                        if o is not None and o[1] == "torch.nn.Linear" and not has_fwd:
                            verdict_of[key] = ("linear-subclass-no-forward", p)
                        elif linear_forward(node, top2, qf):
                            verdict_of[key] = ("linear-like", p)
                        else:
                            verdict_of[key] = ("other-class", p)
            used[attr] = [q, *verdict_of[key]]
        tree = ast.parse(ftext)
        fwd = tree.body[0]
        ll = {a for a, u in used.items() if u[1] == "linear-like"}
        pre = {a for a, u in used.items() if u[1] == "linear-subclass-no-forward"}
        rows.append({"package": package, "path": path, "ns": ns, "cls": cname, "line": line, "fams": fams,
                     "fams_ll": sorted(llc._families(fwd, ll)) if ll else [],
                     "fams_pre": sorted(llc._families(fwd, pre)) if pre else [], "used": used})
(OUT / "rows.json").write_text(json.dumps(rows, indent=1))
print(len(rows), "user classes", len({r['package'] for r in rows}), "packages", file=sys.stderr)
