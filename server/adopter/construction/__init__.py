"""Build an `nn.Module` class of someone's code and example inputs for it, without being told how.

Shared by everything that runs the user's code on request (the accelerator search's user-model loading,
the recall oracle in `bench/oracle`, `adopter verify`): a factory `module:fn` when given; otherwise the
constructor's defaults, small integers for the sizes its parameter names say (`dim`, `num_heads`,
`depth`, …), and the package's configuration class for config-driven classes. Inputs come from the
model's first layer (an Embedding takes token ids, a Linear `(B, T, in_features)`, a Conv2d
`(B, C, H, W)`, …) or are given. `construct` never raises: a class it cannot build gives `NotBuilt`,
which names the argument it could not supply. This package imports torch; the static analysis
(`analysis`, `engine`, `dsl`, `lsp`) never imports it.
"""

from __future__ import annotations

from adopter.construction.arguments import (
    FLIPS,
    boolean_parameters,
    config_class,
    constructor_arguments,
    shrink_config,
)
from adopter.construction.build import construct, load_factory
from adopter.construction.inputs import alternatives, first_layer, forward_inputs, input_for_layer
from adopter.construction.shapes import candidates, forward_rank
from adopter.construction.types import Built, Construction, NotBuilt

__all__ = [
    "FLIPS", "Built", "Construction", "NotBuilt", "alternatives", "boolean_parameters", "candidates", "config_class", "construct", "constructor_arguments", "first_layer",
    "forward_inputs", "forward_rank", "input_for_layer", "load_factory", "shrink_config",
]
