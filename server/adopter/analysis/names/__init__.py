"""Names: what a name denotes in one file: its symbol table (imports, classes, functions, aliases), what a
qualified callee is, `def` signatures, assignment targets and the shape of a chaining `forward`."""
