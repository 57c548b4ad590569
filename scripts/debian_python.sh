#!/usr/bin/env bash
# A CPython that the host's Debian does not ship, from Debian's own binary packages, runnable in place:
#
#   scripts/debian_python.sh 3.14 /work/py314      # then /work/py314/bin/python3.14 (and python3)
#
# For machines that reach Debian's package archive but not python.org or GitHub (so pyenv, uv and
# python-build-standalone cannot fetch an interpreter), and where the archive serves the .deb files but not
# the source packages (the .orig.tar.xz answers 404 on the development machines), so building from source
# is not possible either. What it does:
#   1. reads the suite's Packages index (SUITE, default sid) and takes python<VERSION>-minimal, its
#      stdlib, venv and the pip/setuptools wheels, with the closure of their Depends (libc6 included:
#      sid's CPython needs a newer glibc than the host's), less data-only packages the host already has;
#   2. downloads each .deb, checks its sha256 against the index, unpacks it under PREFIX/root;
#   3. points the interpreter binary at that root's dynamic loader and libraries (patchelf: PT_INTERP
#      and DT_RPATH, which also covers extension modules and wheels it loads), and points ensurepip at
#      the root's wheel folder;
#   4. links PREFIX/bin/python<VERSION> and python3 to it, and checks that ssl, venv, sqlite3, ctypes and
#      friends import and that `-m venv` makes an environment with pip.
# The result is not relocatable (the loader path is absolute). Installs patchelf with apt-get if missing
# (as root). DEBIAN_MIRROR names another mirror; WITH_DEV=1 adds the headers (python<VERSION>-dev),
# for building extension modules with it (scripts/build_native.py's mypyc, an sdist).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 VERSION PREFIX   (e.g. $0 3.14 /opt/python3.14)" >&2
  exit 2
fi
version=$1
prefix=$2
case "$version" in
  3.[0-9]|3.[0-9][0-9]) ;;
  *) echo "VERSION must be a minor version like 3.14, got '$version'" >&2; exit 2 ;;
esac
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${SUITE:-sid}
arch=$(dpkg --print-architecture)
host_python=$(command -v python3 || true)
if [ -z "$host_python" ]; then
  echo "needs a python3 on PATH (any version) to read the package index" >&2
  exit 1
fi
if ! command -v patchelf >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get install -y -q patchelf >/dev/null
  else
    echo "needs patchelf (apt-get install patchelf)" >&2
    exit 1
  fi
fi
if [ -e "$prefix/root" ]; then
  echo "$prefix/root exists: remove $prefix first" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/debian-python.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== reading $mirror/dists/$suite/main/binary-$arch/Packages.xz"
curl -fsSL -o "$work/Packages.xz" "$mirror/dists/$suite/main/binary-$arch/Packages.xz"
xz -d "$work/Packages.xz"
# "filename sha256" for each .deb to fetch.
"$host_python" - "$work/Packages" "$version" > "$work/debs" <<'EOF'
import os
import re
import sys

index, version = sys.argv[1], sys.argv[2]
packages: dict[str, dict[str, str]] = {}
fields: dict[str, str] = {}
for line in open(index, encoding="utf-8"):
    if line == "\n":
        if fields:
            packages.setdefault(fields["Package"], fields)
        fields = {}
    elif line[0] not in " \t":
        key, _, value = line.partition(":")
        fields[key] = value.strip()
if fields:
    packages.setdefault(fields["Package"], fields)
# Data or tools the host already has (or the interpreter does not need to run).
skip = {"tzdata", "media-types", "mime-support", "netbase", "debconf", "libc-bin", "base-files", "dpkg",
        "perl-base", "ca-certificates", "openssl", "readline-common", "libc-gconv-modules-extra"}
wanted = [f"python{version}-minimal", f"libpython{version}-minimal", f"libpython{version}-stdlib",
          f"python{version}", f"python{version}-venv", "python3-pip-whl", "python3-setuptools-whl"]
if os.environ.get("WITH_DEV") == "1":  # the headers, for building extension modules (mypyc, sdists)
    wanted += [f"libpython{version}-dev", f"python{version}-dev"]
order: list[str] = []
stack = list(reversed(wanted))
while stack:
    name = stack.pop()
    if name in order or name in skip:
        continue
    if name not in packages:
        sys.exit(f"{name}: not in the index")
    order.append(name)
    depends = ",".join(packages[name].get(k, "") for k in ("Pre-Depends", "Depends"))
    for alternatives in filter(None, (d.strip() for d in depends.split(","))):
        first = re.split(r"[\s(:]", alternatives.split("|")[0].strip())[0]
        stack.append(first)
for name in order:
    p = packages[name]
    print(p["Filename"], p["SHA256"], name, p["Version"])
EOF
mkdir -p "$prefix/root" "$prefix/bin"
while read -r filename sha name debver; do
  echo "   $name $debver"
  deb="$work/$(basename "$filename")"
  curl -fsSL -o "$deb" "$mirror/$filename"
  echo "$sha  $deb" | sha256sum -c --quiet
  dpkg-deb -x "$deb" "$prefix/root"
done < "$work/debs"
cp "$work/debs" "$prefix/root/DEBIAN-PACKAGES"

root="$prefix/root"
exe="$root/usr/bin/python$version"
loader=$(find "$root/usr/lib" -maxdepth 2 -name 'ld-linux*.so.*' | head -n1)
if [ -z "$loader" ]; then
  echo "no dynamic loader in the unpacked libc6" >&2
  exit 1
fi
libdir=$(dirname "$loader")
echo "== patching $exe (loader $loader)"
patchelf --set-interpreter "$loader" --force-rpath --set-rpath "$libdir:$root/usr/lib" "$exe"
# Debian's ensurepip takes pip and setuptools from WHEEL_PKG_DIR (/usr/share/python-wheels): this root's.
for sysconfigdata in "$root/usr/lib/python$version"/_sysconfigdata_*.py; do
  sed -i "s|'WHEEL_PKG_DIR': '/usr/share/python-wheels/\\?'|'WHEEL_PKG_DIR': '$root/usr/share/python-wheels/'|" "$sysconfigdata"
done
if ! grep -q "'WHEEL_PKG_DIR': '$root/usr/share/python-wheels/'" "$root/usr/lib/python$version"/_sysconfigdata_*.py; then
  echo "could not point WHEEL_PKG_DIR at $root/usr/share/python-wheels" >&2
  exit 1
fi
# Debian's pyconfig.h includes <TRIPLET/pythonX.Y/pyconfig.h> from the system include path: make it a
# path relative to itself, so that the headers work from this root with no -I.
if [ -f "$root/usr/include/python$version/pyconfig.h" ]; then
  sed -i -E 's|#( *)include <([a-z0-9_]+-[a-z0-9_]+-gnu[a-z0-9_]*/python[0-9.]+/pyconfig\.h)>|#\1include "../\2"|' \
    "$root/usr/include/python$version/pyconfig.h"
fi
ln -sf "$exe" "$prefix/bin/python$version"
ln -sf "python$version" "$prefix/bin/python3"

"$prefix/bin/python$version" - <<'EOF'
import bz2, ctypes, lzma, readline, sqlite3, ssl, sys, uuid, venv, zlib  # noqa: F401, E401
print(sys.version.replace("\n", " "), "| prefix", sys.prefix)
print("ssl:", ssl.OPENSSL_VERSION, "| sqlite3:", sqlite3.sqlite_version, "| ctypes:", ctypes.sizeof(ctypes.c_void_p) * 8, "bit")
EOF
"$prefix/bin/python$version" -m venv "$work/venv-check"
"$work/venv-check/bin/python" -m pip --version
echo "== done: $prefix/bin/python$version"
