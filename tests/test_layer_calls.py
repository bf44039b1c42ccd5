"""A module that a network calls twice per forward pass is captured at its first call, whatever else is listed.

A hand-made trunk applies one ReLU module twice: relu(conv(x)), then relu(mix(h) - 1). The first call's
output, average-pooled, is computed directly; the layer extractor must give it with ``relu`` listed
alone, with a later layer listed beside it, and the single-layer extractor must agree.
"""

import copy

import torch
from torch import nn

from biastransfer.models.extractors import FeatureExtractor
from biastransfer.models.layers import LayerExtractor


class SharedReLU(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.mix, self.relu, self.head = (
            nn.Conv2d(3, 4, 1),
            nn.Conv2d(4, 4, 1),
            nn.ReLU(),
            nn.Conv2d(4, 2, 1),
        )

    def forward(self, x):
        h = self.relu(self.conv(x))
        return self.head(self.relu(self.mix(h) - 1.0))


def test_a_module_called_twice_is_captured_at_its_first_call_whatever_else_is_listed():
    trunk = SharedReLU().eval()
    images = torch.randn(3, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        first = trunk.relu(trunk.conv(images)).mean(dim=(2, 3))
        second = trunk.relu(trunk.mix(trunk.relu(trunk.conv(images))) - 1.0).mean(dim=(2, 3))
        assert not torch.allclose(first, second), "the two calls must differ for the test to mean anything"
        alone = LayerExtractor(trunk, ["relu"], pool="avg", probe_size=8)
        with_later = LayerExtractor(trunk, ["relu", "head"], pool="avg", probe_size=8)
        with_earlier = LayerExtractor(trunk, ["conv", "relu"], pool="avg", probe_size=8)
        single = FeatureExtractor(copy.deepcopy(trunk), layer="relu", pool="avg", penultimate_dim=0, probe_size=8)
        torch.testing.assert_close(alone(images), first)
        torch.testing.assert_close(with_later(images)[:, :4], first)
        torch.testing.assert_close(with_earlier(images)[:, 4:], first)
        torch.testing.assert_close(single(images), first)
        assert with_later.layers == ["relu", "head"] and with_earlier.layers == ["conv", "relu"]
