"""ResNet bottleneck blocks and a small ResNet stem, as in torchvision and Hugging Face ResNet."""

from __future__ import annotations

import torch
from torch import nn


class ConvBNAct(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3, stride: int = 1,
                 activation: bool = True) -> None:
        super().__init__()
        self.convolution = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                                     padding=kernel_size // 2, bias=False)
        self.normalization = nn.BatchNorm2d(out_channels)
        self.activation = nn.ReLU() if activation else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.convolution(x)
        x = self.normalization(x)
        return self.activation(x)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_channels: int, channels: int, stride: int = 1) -> None:
        super().__init__()
        out_channels = channels * self.expansion
        self.conv1 = nn.Conv2d(in_channels, channels, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.conv3 = nn.Conv2d(channels, out_channels, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = self.shortcut(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class SmallResNet(nn.Module):
    def __init__(self, num_classes: int = 1000, depths: tuple[int, ...] = (3, 4, 6, 3)) -> None:
        super().__init__()
        self.stem = ConvBNAct(3, 64, kernel_size=7, stride=2)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        stages = []
        in_channels = 64
        for i, depth in enumerate(depths):
            channels = 64 * 2**i
            for j in range(depth):
                stages.append(Bottleneck(in_channels, channels, stride=2 if j == 0 and i > 0 else 1))
                in_channels = channels * Bottleneck.expansion
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(in_channels, num_classes)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.stem(pixel_values))
        x = self.stages(x)
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.head(x)
