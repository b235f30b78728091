"""Today's architectures to capture, with random weights (nothing is
downloaded) and SGD with momentum; each a function of the
batch size returning a :class:`~dtrlab.capture.Workload` (default batch
sizes: config ``capture.batch``). Seeded, so the same library versions give
the same traces.

| name | model | input | loss |
|---|---|---|---|
| ``resnet50`` | torchvision ResNet-50 | 224×224 RGB images | cross-entropy, 1000 classes |
| ``vit_b_16`` | torchvision ViT-B/16 | 224×224 RGB images | cross-entropy, 1000 classes |
| ``gpt2_small`` | decoder-only transformer of GPT-2 small's size (12 layers, 12 heads, width 768, 1024 positions, vocabulary 50,257; ``torch.nn.TransformerEncoderLayer`` with a causal mask) | 128 tokens | next-token cross-entropy |
| ``lstm_lm`` | LSTM language model (2 layers of ``nn.LSTMCell`` unrolled over time, width 650, vocabulary 10,000: the "medium" PTB model) | 35 tokens | next-token cross-entropy |
| ``unet`` | U-Net (4 levels, 32 base channels, ``torch.nn`` blocks) | 128×128 RGB images | per-pixel cross-entropy, 2 classes |
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from dtrlab.capture import Workload
from dtrlab.config import defaults


def _sgd(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def _classifier(model: nn.Module, batch: int, size: int = 224, classes: int = 1000) -> Workload:
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, classes, (batch,))
    return Workload(model, (x,), lambda out: nn.functional.cross_entropy(out, y), _sgd(model))


def resnet50(batch: int) -> Workload:
    from torchvision.models import resnet50 as make

    torch.manual_seed(0)
    return _classifier(make(weights=None), batch)


def vit_b_16(batch: int) -> Workload:
    from torchvision.models import vit_b_16 as make

    torch.manual_seed(0)
    return _classifier(make(weights=None), batch)


class DecoderLM(nn.Module):
    """A decoder-only transformer language model (pre-norm, learned positions)."""

    def __init__(self, vocab: int, width: int, layers: int, heads: int, positions: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(positions, width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        h = self.tokens(ids) + self.positions(torch.arange(n))
        mask = nn.Transformer.generate_square_subsequent_mask(n)
        return self.head(self.norm(self.blocks(h, mask=mask, is_causal=True)))


def _next_token(model: nn.Module, ids: torch.Tensor, vocab: int) -> Workload:
    return Workload(model, (ids[:, :-1],),
                    lambda out: nn.functional.cross_entropy(out.reshape(-1, vocab), ids[:, 1:].reshape(-1)),
                    _sgd(model))


def gpt2_small(batch: int, tokens: int = 128) -> Workload:
    torch.manual_seed(0)
    vocab = 50257
    model = DecoderLM(vocab, 768, 12, 12, 1024)
    return _next_token(model, torch.randint(0, vocab, (batch, tokens + 1)), vocab)


class LstmLM(nn.Module):
    """An LSTM language model unrolled over time with ``nn.LSTMCell`` (a fused
    ``nn.LSTM`` runs a whole layer as one operator on the CPU, which would
    hide the time steps DTR works on)."""

    def __init__(self, vocab: int, width: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.cells = nn.ModuleList([nn.LSTMCell(width, width) for _ in range(layers)])
        self.head = nn.Linear(width, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        batch, steps, width = x.shape
        state = [(x.new_zeros(batch, width), x.new_zeros(batch, width)) for _ in self.cells]
        outs = []
        for t in range(steps):
            h = x[:, t]
            for i, cell in enumerate(self.cells):
                state[i] = cell(h, state[i])
                h = state[i][0]
            outs.append(h)
        return self.head(torch.stack(outs, dim=1))


def lstm_lm(batch: int, tokens: int = 35) -> Workload:
    torch.manual_seed(0)
    vocab = 10000
    return _next_token(LstmLM(vocab, 650, 2), torch.randint(0, vocab, (batch, tokens + 1)), vocab)


def _double_conv(cin: int, cout: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, channels: int = 3, classes: int = 2, base: int = 32, levels: int = 4) -> None:
        super().__init__()
        widths = [base * 2**i for i in range(levels + 1)]
        self.down = nn.ModuleList([_double_conv(channels, widths[0])]
                                  + [_double_conv(widths[i], widths[i + 1]) for i in range(levels)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2)
                                 for i in reversed(range(levels))])
        self.merge = nn.ModuleList([_double_conv(2 * widths[i], widths[i]) for i in reversed(range(levels))])
        self.out = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else nn.functional.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([skips.pop(), up(x)], dim=1))
        return self.out(x)


def unet(batch: int, size: int = 128) -> Workload:
    torch.manual_seed(0)
    model = UNet()
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 2, (batch, size, size))
    return Workload(model, (x,), lambda out: nn.functional.cross_entropy(out, y), _sgd(model))


#: Every built-in model, by name.
MODELS: dict[str, Callable[..., Workload]] = {
    "resnet50": resnet50,
    "vit_b_16": vit_b_16,
    "gpt2_small": gpt2_small,
    "lstm_lm": lstm_lm,
    "unet": unet,
}

#: Each model's batch size unless one is given: the schema's capture.batch.
DEFAULT_BATCH: dict[str, int] = defaults()["capture"]["batch"]
