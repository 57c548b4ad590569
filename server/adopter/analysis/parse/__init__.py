"""Parse: the source checks, the shared tree-sitter parser, incremental re-parsing and the salvage of broken text."""
