"""Cross-file: reading other files (never importing them) for base classes, imported layers and importers."""
