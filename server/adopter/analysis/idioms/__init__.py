"""Idioms: model-code idioms read as what they do: layer subclasses, thin submodules, loss methods, optimizers."""
