"""lsp layer."""
