"""Start the Adopter language server from what the VS Code extension carries.

Run by the extension as `python launch.py [adopter arguments]` (default `lsp`). Puts the extension's
`server/`, `bundled/libs` and, in a platform-specific .vsix, `bundled/native/cp3XY` in front of the
interpreter's own packages (also for the search's child processes, through PYTHONPATH). Written for any
Python 3 so that a too-old interpreter gets a clear message (exit status 3) rather than a syntax error.

Before the server starts, every package it needs is imported (the compiled ones load their binaries).
If one is missing, or its binary does not load, the launcher exits with status 4 (MISSING) before any
LSP traffic, and prints one JSON line to stderr, e.g.
`{"adopter": "missing", "missing": [{"module": "tree_sitter", "package": "tree-sitter", ...}], ...}`.
`python launch.py --probe` does only that check and prints the same JSON line to stdout (with
`"adopter": "ready"` and status 0 when nothing is missing): the extension runs it first, so that a Python
without the packages gets one notification with an Install button instead of a server that crash-loops.
"""
import json
import os
import sys

TOO_OLD = 3
MISSING = 4
MINIMUM = (3, 10)
# What the server imports at start, as (module to import, PyPI distribution). The compiled ones (the
# universal .vsix does not carry them) come first; importing them loads their parser binaries.
REQUIRED = (
    ("tree_sitter", "tree-sitter"),
    ("tree_sitter_python", "tree-sitter-python"),
    ("lark", "lark"),
    ("pygls", "pygls"),
    ("lsprotocol", "lsprotocol"),
    ("cattrs", "cattrs"),
)


def missing_packages():
    """The required packages that do not import, each with the reason."""
    import importlib

    out = []
    for module, package in REQUIRED:
        try:
            importlib.import_module(module)
        except Exception as exc:  # ImportError, or an OSError from a binary built for another platform
            out.append({"module": module, "package": package, "error": "%s: %s" % (type(exc).__name__, exc)})
    return out


def report(missing):
    """The machine-readable line the extension reads (one JSON object)."""
    return json.dumps({
        "adopter": "missing" if missing else "ready",
        "missing": missing,
        "python": list(sys.version_info[:3]),
        "executable": sys.executable,
    })


def bundled_paths(root):
    """The folders of the extension to import from, most specific first."""
    tag = "cp%d%d" % sys.version_info[:2]
    candidates = [
        os.path.join(root, "server"),
        os.path.join(root, "bundled", "native", tag),
        os.path.join(root, "bundled", "libs"),
    ]
    return [p for p in candidates if os.path.isdir(p)]


def main():
    if tuple(sys.version_info[:2]) < MINIMUM:
        sys.stderr.write("adopter: Python %d.%d at %s is too old; the Adopter server needs Python %d.%d or newer\n"
                         % (sys.version_info[0], sys.version_info[1], sys.executable, MINIMUM[0], MINIMUM[1]))
        return TOO_OLD
    root = os.environ.get("ADOPTER_EXTENSION_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    paths = bundled_paths(root)
    sys.path[:0] = paths
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(paths + ([old] if old else []))
    args = sys.argv[1:]
    missing = missing_packages()
    if args[:1] == ["--probe"]:
        sys.stdout.write(report(missing) + "\n")
        return MISSING if missing else 0
    if missing:
        sys.stderr.write(report(missing) + "\n")
        sys.stderr.write("adopter: Python %d.%d at %s lacks %s, which the server needs (the universal .vsix carries "
                         "only the pure-Python packages). Install the .vsix of your platform, or run `%s -m pip "
                         "install %s`\n" % (sys.version_info[0], sys.version_info[1], sys.executable,
                                            ", ".join(m["package"] for m in missing), sys.executable,
                                            " ".join(m["package"] for m in missing)))
        return MISSING
    try:
        from adopter.cli import main as adopter_main
    except ImportError as exc:
        sys.stderr.write("adopter: cannot import the server with %s: %s\n" % (sys.executable, exc))
        return MISSING
    return adopter_main(args or ["lsp"])


if __name__ == "__main__":
    sys.exit(main())
