"""Subcommands of the `adopter` CLI, one module each (see `adopter.cli`)."""
