"""A tiny multilayer perceptron with a custom block, a dropout and a buffer."""

import torch
from torch import nn


class ScaledBlock(nn.Module):
    """Linear -> ReLU -> Dropout, then a fixed per-feature scale (a persistent buffer)."""

    def __init__(self, in_features, out_features, dropout):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.activation = nn.ReLU()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, out_features))

    def forward(self, x):
        return self.dropout(self.activation(self.linear(x))) * self.scale


class TinyMLP(nn.Module):
    def __init__(self, input_size=4, hidden_size=8, output_size=3, dropout=0.1):
        super().__init__()
        self.encoder = ScaledBlock(input_size, hidden_size, dropout)
        self.head = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        return self.head(self.encoder(x))
