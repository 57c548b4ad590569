# ruff: noqa
# Forms of family 16 sites written for bench/forms.py (mech2); `# site: N` marks the line a labeller would mark.
import torch
from torch import nn
import torch.nn.functional as F


class GPT(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.lm_head = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        x = self.tok(idx)
        logits = self.lm_head(x)  # site: 16
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class LM(nn.Module):
    def __init__(self, num_tokens, dim):
        super().__init__()
        self.emb = nn.Embedding(num_tokens, dim)
        self.to_logits = nn.Linear(dim, num_tokens)
        self.loss_fn = nn.CrossEntropyLoss(ignore_index=0)

    def forward(self, x, labels):
        logits = self.to_logits(self.emb(x))  # site: 16
        return self.loss_fn(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


class Seq(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

    def forward(self, h):
        return self.head(h)  # site: 16 (the head call; its loss is in compute_loss)

    def compute_loss(self, h, targets):
        logits = self.forward(h)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


class Rearr(nn.Module):
    def __init__(self, dim, vocab):
        super().__init__()
        self.proj = nn.Linear(dim, vocab)

    def forward(self, x, y):
        logits = self.proj(x)  # site: 16
        return F.cross_entropy(logits.transpose(1, 2), y)


class Classifier(nn.Module):
    def __init__(self, dim, num_classes):
        super().__init__()
        self.fc = nn.Linear(dim, num_classes)

    def forward(self, x, y):
        return F.cross_entropy(self.fc(x), y)
