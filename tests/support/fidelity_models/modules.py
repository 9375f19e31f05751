"""``RecipeModule``: a ``torch.nn.Module`` computing one named operation on its input tensor."""

import torch

OPERATIONS = ("echo", "flip", "wide", "half", "nonzero", "sum", "linear", "scalar")


class RecipeModule(torch.nn.Module):
    """``forward(x)`` is ``operation`` on ``x``; ``linear`` is a seeded ``Linear(features, 2)`` (float32)."""

    def __init__(self, operation, features=None):
        super().__init__()
        if operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}; known: {', '.join(OPERATIONS)}")
        self.operation = operation
        if operation == "linear":
            generator = torch.Generator().manual_seed(features)
            self.linear = torch.nn.Linear(features, 2)
            with torch.no_grad():
                self.linear.weight.copy_(torch.randn(2, features, generator=generator))
                self.linear.bias.copy_(torch.randn(2, generator=generator))

    def forward(self, x):
        operation = self.operation
        if operation == "echo":
            return x.clone()
        if operation == "flip":
            if x.dtype == torch.bool:
                return torch.logical_not(x)
            return -x if x.is_floating_point() else torch.bitwise_not(x)
        if operation == "wide":
            return x.to(torch.float64)
        if operation == "half":
            return x.to(torch.float16)
        if operation == "nonzero":
            return x != 0
        if operation == "sum":
            wide = x.to(torch.float64)
            return wide.flatten(1).sum(dim=1) if wide.dim() > 1 else wide
        if operation == "linear":
            return self.linear(x)
        return x.to(torch.float64).sum()  # "scalar": a rank-0 output
