"""The runtime study's workloads: the five built-in models
(:mod:`dtrlab.capture.models`) and re-creations in stock PyTorch of two
2020 workloads of the public traces, each at a size the study can run at
many budgets on two cores (configuration ``runtime.sizes``).

What the comparison needs is the same step captured and executed, not the
capture study's sizes: batch, resolution and sequence length are cut until
a step takes about a second with the runtime; the architectures are kept.

The 2020 re-creations follow the DTR prototype's model code
(``dtr_code/shared/torch_models`` of ``uwsampl/dtr-prototype``), written
anew here:

- ``lstm_2020``: its hand-written LSTM cell (input, output and update gates
  from one linear map of the input plus one of the cell state, split in
  three; the new cell state the input gate times the update, plus in place
  a sigmoid of the input's and the hidden state's products), unrolled over
  a sequence of inputs (zeros, as its loop gives them) from a zero state;
  the loss is the sum of the last cell state; no optimizer (its loop has
  none).
- ``resnet32_2020``: the CIFAR ResNet-32 (three stages of five basic
  blocks, 16, 32 and 64 channels, shortcuts that subsample and pad with
  zeros, Kaiming-initialised convolutions), on 32x32 images,
  cross-entropy, SGD with momentum 0.9 and learning rate 0.1 (its loop's).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from dtrlab.capture import Workload, models

F = nn.functional


class PrototypeLstmCell(nn.Module):
    def __init__(self, in_dim: int, mem_dim: int) -> None:
        super().__init__()
        self.mem_dim = mem_dim
        self.ioux = nn.Linear(in_dim, 3 * mem_dim)
        self.iouh = nn.Linear(mem_dim, 3 * mem_dim, bias=False)
        self.fx = nn.Linear(in_dim, mem_dim)
        self.fh = nn.Linear(mem_dim, mem_dim, bias=False)

    def forward(self, x: torch.Tensor, c: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        iou = self.ioux(x) + self.iouh(c)
        i, o, u = torch.split(iou, self.mem_dim, dim=1)
        i, o, u = torch.sigmoid(i), torch.sigmoid(o), torch.tanh(u)
        c = i * u
        c += torch.sigmoid(self.fx(x) * self.fh(h))
        return c, o * torch.tanh(c)


class PrototypeLstm(nn.Module):
    def __init__(self, in_dim: int, mem_dim: int) -> None:
        super().__init__()
        self.cell = PrototypeLstmCell(in_dim, mem_dim)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        c = h = inputs[0].new_zeros(1, self.cell.mem_dim)
        for x in inputs:
            c, h = self.cell(x, c, h)
        return c


def lstm_2020(length: int = 32, input_size: int = 64, in_dim: int = 64, mem_dim: int = 256) -> Workload:
    """The prototype's LSTM over ``length`` inputs of ``input_size`` rows."""
    torch.manual_seed(0)
    model = PrototypeLstm(in_dim, mem_dim)
    inputs = tuple(torch.zeros(input_size, in_dim) for _ in range(length))
    return Workload(model, inputs, lambda c: c.sum(), None)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.pad = (cout - cin) // 2 if stride != 1 or cin != cout else None

    def shortcut(self, x: torch.Tensor) -> torch.Tensor:
        if self.pad is None:
            return x
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    def __init__(self, blocks: int = 5, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for stage, cout in enumerate((16, 32, 64)):
            for b in range(blocks):
                layers.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(64, classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        out = F.avg_pool2d(out, out.shape[3]).flatten(1)
        return self.linear(out)


def resnet32_2020(batch: int = 4, size: int = 32) -> Workload:
    torch.manual_seed(0)
    model = CifarResNet()
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 10, (batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return Workload(model, (x,), lambda out: F.cross_entropy(out, y), opt)


#: Every workload of the study, by name (keyword sizes: ``runtime.sizes``).
WORKLOADS: dict[str, Callable[..., Workload]] = {
    **models.MODELS,
    "lstm_2020": lstm_2020,
    "resnet32_2020": resnet32_2020,
}


def make(name: str, sizes: dict | None = None) -> Workload:
    """The workload ``name`` at ``sizes`` (keyword arguments of its function)."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}: one of {', '.join(WORKLOADS)}")
    return WORKLOADS[name](**(sizes or {}))
