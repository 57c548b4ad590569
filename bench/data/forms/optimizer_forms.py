# ruff: noqa
# Forms of family 17 sites written for bench/forms.py (mech2); `# site: N` marks the line a labeller would mark.
import torch
from torch import optim
from torch.optim import AdamW


class LitModel:
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)  # site: 17


def build_optimizer(model, cfg):
    params = [p for p in model.parameters() if p.requires_grad]
    if cfg.name == "adam":
        return optim.Adam(params, lr=cfg.lr, betas=(0.9, 0.99))  # site: 17
    return optim.SGD(params, lr=cfg.lr)


def make_optimizer(model, optimizer_class=torch.optim.Adam, lr=1e-3):
    return optimizer_class(model.parameters(), lr=lr)  # site: 17


def get_optimizer(model, name="AdamW", lr=1e-3):
    opt_cls = getattr(torch.optim, name)
    return opt_cls(model.parameters(), lr=lr)  # site: 17


class Trainer:
    def __init__(self, model, lr=1e-3):
        self.model = model
        self.optimizer = AdamW(model.parameters(), lr=lr, weight_decay=0.05)  # site: 17


OPTIMIZERS = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}


def from_table(model, name="adam"):
    return OPTIMIZERS[name](model.parameters(), lr=1e-3)  # site: 17


def partial_opt(model):
    from functools import partial
    factory = partial(torch.optim.AdamW, lr=1e-3, betas=(0.9, 0.95))
    return factory(model.parameters())  # site: 17
