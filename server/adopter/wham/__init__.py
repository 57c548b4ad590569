"""wham layer."""
