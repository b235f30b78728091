"""Small models the project does not ship, for the runtime's tests: each
exercises what a real runtime must get right (views, in-place operators,
batch norm, max-pool indices, dropout, an unrolled LSTM cell, attention),
and each is a ``module:function`` workload for ``dtrlab run-dtr``.

Every function takes ``batch`` and ``optimizer`` (``none``, ``sgd`` or
``adam``: the multi-tensor kernels, ``foreach=True``) and returns a
:class:`dtrlab.capture.Workload` with seeded random weights.
"""

from __future__ import annotations

import torch
from torch import nn

from dtrlab.capture import Workload

F = nn.functional


class Views(nn.Module):
    """split, chunk, cat, transpose, narrow, view: aliases of one storage."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 48)
        self.b = nn.Linear(16, 16)

    def forward(self, x):
        h = self.a(x)
        p, q, r = h.split(16, dim=1)
        u, v = torch.chunk(torch.tanh(p * q), 2, dim=0)
        w = torch.cat([v, u], 0).transpose(0, 1).contiguous().t()
        return self.b(w + r.view(r.shape).narrow(1, 0, 16))


class ConvNet(nn.Module):
    """Convolutions, batch norm (its running statistics updated in place),
    ``ReLU(inplace=True)``, max-pool with its indices."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.act = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(2, return_indices=True)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 16 * 16, 5)

    def forward(self, x):
        h = self.act(self.bn1(self.c1(x)))
        p, idx = self.pool(h)
        p = self.act(self.bn2(self.c2(p)))
        return self.fc(p.flatten(1)) + (idx % 7).float().mean()


class Dropout(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(32, 64)
        self.b = nn.Linear(64, 64)
        self.c = nn.Linear(64, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.c(self.drop(torch.relu(self.b(self.drop(torch.relu(self.a(x)))))))


class LstmCell(nn.Module):
    """``nn.LSTMCell`` unrolled over time: on the CPU its gates are chunks of
    one storage, each written in place (``sigmoid_``, ``tanh_``)."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = c = x.new_zeros(x.shape[1], 16)
        outs = []
        for t in range(x.shape[0]):
            h, c = self.cell(x[t], (h, c))
            outs.append(h)
        return self.head(torch.stack(outs).mean(0))


class Attention(nn.Module):
    """Multi-head attention, layer norm, causal scaled dot-product attention."""

    def __init__(self) -> None:
        super().__init__()
        self.att = nn.MultiheadAttention(16, 4, batch_first=True)
        self.ln = nn.LayerNorm(16)
        self.o = nn.Linear(16, 2)

    def forward(self, x):
        a, _ = self.att(x, x, x, need_weights=False)
        h = self.ln(x + a)
        q = h.view(h.shape[0], h.shape[1], 4, 4).transpose(1, 2)
        h2 = F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(h.shape)
        return self.o(h + h2).sum(1)


class OverlappingWrite(nn.Module):
    """Writes through one view, then reads an overlapping one: beyond what
    the trace format can express exactly."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x):
        h = self.a(x)
        left, middle = h[:, :8], h[:, 4:12]
        left.mul_(2)
        return middle.sum(1, keepdim=True)


def _workload(model: nn.Module, x: torch.Tensor, optimizer: str) -> Workload:
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
    elif optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=0.01, foreach=True)
    elif optimizer == "none":
        opt = None
    else:
        raise ValueError(f"optimizer: none, sgd or adam, not {optimizer!r}")
    return Workload(model, (x,), lambda out: out.square().mean(), opt)


def views(batch: int = 8, optimizer: str = "none") -> Workload:
    torch.manual_seed(0)
    return _workload(Views(), torch.randn(batch, 16), optimizer)


def convnet(batch: int = 2, optimizer: str = "none") -> Workload:
    torch.manual_seed(0)
    return _workload(ConvNet(), torch.randn(batch, 3, 32, 32), optimizer)


def dropout(batch: int = 16, optimizer: str = "none") -> Workload:
    torch.manual_seed(0)
    return _workload(Dropout(), torch.randn(batch, 32), optimizer)


def lstm_cell(batch: int = 4, optimizer: str = "none") -> Workload:
    torch.manual_seed(0)
    return _workload(LstmCell(), torch.randn(6, batch, 8), optimizer)


def attention(batch: int = 2, optimizer: str = "none") -> Workload:
    torch.manual_seed(0)
    return _workload(Attention(), torch.randn(batch, 6, 16), optimizer)


def overlapping_write(batch: int = 4, optimizer: str = "none") -> Workload:
    torch.manual_seed(0)
    return _workload(OverlappingWrite(), torch.randn(batch, 16), optimizer)


#: The models every runtime test runs, by name.
MODELS = {"views": views, "convnet": convnet, "dropout": dropout, "lstm_cell": lstm_cell, "attention": attention}
