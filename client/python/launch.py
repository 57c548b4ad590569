"""Start the Adopter language server from what the VS Code extension carries.

Run by the extension as `python launch.py [adopter arguments]` (default `lsp`). Puts the extension's
`server/`, `bundled/libs` and, in a platform-specific .vsix, `bundled/native/cp3XY` in front of the
interpreter's own packages (also for the search's child processes, through PYTHONPATH). Written for any
Python 3 so that a too-old interpreter gets a clear message (exit status 3) rather than a syntax error.
"""
import os
import sys

TOO_OLD = 3
MISSING = 4
MINIMUM = (3, 10)


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
    try:
        from adopter.cli import main as adopter_main
    except ImportError as exc:
        sys.stderr.write("adopter: cannot import the server with %s: %s. The universal .vsix carries only the "
                         "pure-Python packages: install the platform-specific .vsix, or run "
                         "`%s -m pip install tree-sitter tree-sitter-python libcst`\n" % (sys.executable, exc,
                                                                                       sys.executable))
        return MISSING
    return adopter_main(sys.argv[1:] or ["lsp"])


if __name__ == "__main__":
    sys.exit(main())
