import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        a = torch.relu(x)
        b = torch.relu(a)
        return b
