"""LARS (You et al., 2017), the optimizer SimCLR was trained with."""

from __future__ import annotations

import torch
from torch import nn


class LARS(torch.optim.Optimizer):
    """SGD with momentum and layer-wise adaptive rate scaling (You, Gitman & Ginsburg 2017).

    For a parameter ``w`` with gradient ``g`` in an adapted group: ``d = g + wd * w``,
    ``trust = eta * ||w|| / ||d||`` (1 when either norm is 0), ``v = momentum * v + trust * d``,
    ``w -= lr * v``. Groups with ``lars=False`` (biases and normalisation weights, as in SimCLR)
    skip both the trust ratio and weight decay, i.e. they take plain SGD-momentum steps. Build the
    usual split with :func:`lars_param_groups`.
    """

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0, eta: float = 0.001):
        if not lr > 0 or momentum < 0 or weight_decay < 0 or not eta > 0:
            raise ValueError(
                f"LARS needs lr > 0, momentum >= 0, weight_decay >= 0, eta > 0; got {lr}, {momentum}, {weight_decay}, {eta}"
            )
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, eta=eta, lars=True))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if group["lars"]:
                    if group["weight_decay"]:
                        d = d.add(p, alpha=group["weight_decay"])
                    w_norm, d_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(d)
                    trust = torch.where((w_norm > 0) & (d_norm > 0), group["eta"] * w_norm / d_norm, 1.0)
                    d = d * trust
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = d.detach().clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(d)
                p.add_(state["momentum_buffer"], alpha=-group["lr"])
        return loss


def lars_param_groups(model: nn.Module) -> list[dict]:
    """Weights of layers (>= 2-D) are LARS-adapted; biases and norm parameters (1-D) are not."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if p.ndim > 1], "lars": True},
        {"params": [p for p in params if p.ndim <= 1], "lars": False, "weight_decay": 0.0},
    ]
