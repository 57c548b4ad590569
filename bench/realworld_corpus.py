"""The real-world detection corpus: model files of popular PyTorch libraries, pinned, read from PyPI archives.

Nothing here is committed: `fetch()` downloads each distribution once (`pip download --no-deps`) into
`.cache/realworld/` (`ADOPTER_REALWORLD_DIR` overrides it); `files()` reads the listed members straight
from the wheels and source archives. Labels live in `bench/data/realworld/labels/<package>.json`.
Run `python bench/realworld_corpus.py [--extract DIR]` to fetch (and optionally unpack the listed files).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (distribution, version, archive kind, [paths inside the package archive]); the version is pinned so
# the line numbers of the labels stay true.
MANIFEST: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("timm", "1.0.12", (
        "timm/models/vision_transformer.py", "timm/models/beit.py", "timm/models/convnext.py",
        "timm/layers/mlp.py", "timm/layers/norm.py")),
    ("torchvision", "0.20.1", (
        "torchvision/models/vision_transformer.py", "torchvision/models/swin_transformer.py",
        "torchvision/models/convnext.py", "torchvision/models/resnet.py")),
    ("open_clip_torch", "2.29.0", ("open_clip/transformer.py", "open_clip/modified_resnet.py")),
    ("vit-pytorch", "1.8.9", ("vit_pytorch/vit.py", "vit_pytorch/cait.py", "vit_pytorch/max_vit.py")),
    ("x-transformers", "1.42.26", ("x_transformers/attend.py",)),
    ("litgpt", "0.5.4", ("litgpt/model.py",)),
    ("mistral_inference", "1.5.0", (
        "mistral_inference/transformer_layers.py", "mistral_inference/rope.py")),
    ("torchtune", "0.4.0", (
        "torchtune/modules/attention.py", "torchtune/modules/rms_norm.py",
        "torchtune/modules/feed_forward.py", "torchtune/modules/position_embeddings.py")),
    ("k-diffusion", "0.1.1.post1", ("k_diffusion/models/image_transformer_v1.py",)),
    ("diffusers", "0.31.0", (
        "diffusers/models/normalization.py", "diffusers/models/activations.py",
        "diffusers/models/attention.py")),
    ("speechbrain", "1.0.2", ("speechbrain/nnet/attention.py",)),
    ("ultralytics", "8.3.40", ("ultralytics/nn/modules/transformer.py",)),
    ("torchaudio", "2.5.1", ("torchaudio/models/conformer.py", "torchaudio/models/wav2vec2/components.py")),
    ("audiocraft", "1.3.0", ("audiocraft/modules/transformer.py",)),
    ("monai", "1.4.0", ("monai/networks/blocks/selfattention.py", "monai/networks/blocks/mlp.py")),
    ("transformers", "5.0.0", tuple(
        f"transformers/models/{m}/modeling_{m}.py"
        for m in ("bert", "gpt2", "llama", "mistral", "t5", "vit", "clip", "whisper", "qwen2", "gemma"))),
)


@dataclass(frozen=True, slots=True)
class RealWorldFile:
    package: str
    version: str
    member: str  # the path inside the package, e.g. "timm/models/beit.py"
    text: str

    @property
    def key(self) -> str:
        """How labels name the file: `<package>/<member>`."""
        return f"{self.package}/{self.member}"


def cache_dir() -> Path:
    return Path(os.environ.get("ADOPTER_REALWORLD_DIR", ROOT / ".cache" / "realworld"))


def _archive(dist: str, version: str, directory: Path | None = None) -> Path | None:
    """The cached wheel or source archive of `dist==version` in `directory` (default `cache_dir()`)."""
    where = cache_dir() if directory is None else directory
    stem = dist.replace("-", "_")
    for pattern in (f"{stem}-{version}-*.whl", f"{dist}-{version}-*.whl", f"{stem}-{version}.tar.gz",
                    f"{dist}-{version}.tar.gz"):
        found = sorted(where.glob(pattern))
        if found:
            return found[0]
    return None


Manifest = tuple[tuple[str, str, tuple[str, ...]], ...]


def fetch(python: str = sys.executable, manifest: Manifest | None = None, directory: Path | None = None) -> None:
    """Download every pinned distribution that is not in the cache yet (no dependencies, no build).
    `manifest` and `directory` default to this module's `MANIFEST` and `cache_dir()`."""
    where = cache_dir() if directory is None else directory
    where.mkdir(parents=True, exist_ok=True)
    for dist, version, _ in MANIFEST if manifest is None else manifest:
        if _archive(dist, version, where) is None:
            subprocess.run([python, "-m", "pip", "download", "--quiet", "--no-deps", "--no-build-isolation",
                            "--dest", str(where), f"{dist}=={version}"], check=True)


def _read(archive: Path, member: str) -> str:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            return zf.read(member).decode("utf-8")
    with tarfile.open(archive) as tf:
        top = tf.getnames()[0].split("/")[0]
        handle = tf.extractfile(f"{top}/{member}")
        if handle is None:
            raise KeyError(member)
        return handle.read().decode("utf-8")


def files(manifest: Manifest | None = None, directory: Path | None = None,
          script: str = "bench/realworld_corpus.py") -> tuple[RealWorldFile, ...]:
    """Every listed file, read from the cached archives; raises FileNotFoundError naming what to run.
    `manifest` and `directory` default to this module's `MANIFEST` and `cache_dir()`; `script` is the
    command the error names."""
    where = cache_dir() if directory is None else directory
    out: list[RealWorldFile] = []
    for dist, version, members in MANIFEST if manifest is None else manifest:
        archive = _archive(dist, version, where)
        if archive is None:
            raise FileNotFoundError(f"{dist}=={version} is not in {where}; run python {script}")
        out.extend(RealWorldFile(dist, version, m, _read(archive, m)) for m in members)
    return tuple(out)


def packages_dir() -> Path:
    """Where `--packages` unpacks whole distributions (for cross-file reach): `.cache/realworld/pkgs`."""
    return cache_dir() / "pkgs"


def extract_packages(dest: Path, manifest: Manifest | None = None, directory: Path | None = None) -> int:
    """Unpack every `.py` file of each pinned archive under `dest/<distribution>/` (the package paths the
    labels use, e.g. `dest/timm/timm/layers/norm.py`), so that imports between a package's files resolve.
    Returns the number of files written; files already there are kept. `manifest` and `directory` (the
    archives' folder) default to this set's; the held-out set passes its own."""
    written = 0
    for dist, version, _ in MANIFEST if manifest is None else manifest:
        archive = _archive(dist, version, directory)
        if archive is None:
            raise FileNotFoundError(f"{dist}=={version} is not in {directory or cache_dir()}; fetch it first "
                                    "(bench/realworld_corpus.py or bench/heldout_corpus.py)")
        root = dest / dist
        if archive.suffix == ".whl":
            with zipfile.ZipFile(archive) as zf:
                members = [(m, m) for m in zf.namelist() if m.endswith(".py")]
                for name, rel in members:
                    target = root / rel
                    if not target.exists():
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(zf.read(name))
                        written += 1
        else:
            with tarfile.open(archive) as tf:
                for info in tf.getmembers():
                    if not info.isfile() or not info.name.endswith(".py") or "/" not in info.name:
                        continue
                    target = root / info.name.split("/", 1)[1]
                    handle = tf.extractfile(info)
                    if handle is not None and not target.exists():
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(handle.read())
                        written += 1
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--extract", metavar="DIR", help="also write the listed files under DIR/<package>/")
    parser.add_argument("--packages", nargs="?", const=str(packages_dir()), metavar="DIR",
                        help="also unpack every .py file of each archive under DIR/<distribution>/ "
                             "(default .cache/realworld/pkgs), for cross-file reach")
    args = parser.parse_args()
    fetch()
    listed = files()
    if args.packages:
        n = extract_packages(Path(args.packages))
        print(f"unpacked {n} new .py files under {args.packages}")
    if args.extract:
        for f in listed:
            dest = Path(args.extract) / f.package / f.member
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(f.text, encoding="utf-8")
    print(f"{len(listed)} files from {len(MANIFEST)} distributions in {cache_dir()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
