"""Chains: `nn.Sequential`s built outside a forward (in functions, methods, lists, subclasses) read as layer chains."""
