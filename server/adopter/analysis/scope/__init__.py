"""Scope: which classes of a file are nn.Modules (with base classes read across files) and what `__init__`
binds each `self.<attr>` to."""
