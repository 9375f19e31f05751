"""A small custom network: normalisation buffer, residual hidden block, softmax head."""

import torch
from torch import nn


class ResidualBlock(nn.Module):
    def __init__(self, width, dropout):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.activation = nn.GELU()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return x + self.dropout(self.activation(self.linear(x)))


class TabularNet(nn.Module):
    """Scores ``classes`` classes from ``input_size`` numeric features; returns probabilities."""

    def __init__(self, input_size=4, hidden_size=16, classes=3, dropout=0.1):
        super().__init__()
        self.register_buffer("feature_scale", torch.ones(input_size))
        self.embed = nn.Linear(input_size, hidden_size)
        self.block = ResidualBlock(hidden_size, dropout)
        self.head = nn.Linear(hidden_size, classes)

    def forward(self, x):
        hidden = self.block(torch.relu(self.embed(x * self.feature_scale)))
        return torch.softmax(self.head(hidden), dim=-1)
