"""Flow: the control and data flow of `forward` (and of plain functions) as a tree of operator applications."""
