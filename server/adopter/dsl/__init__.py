"""dsl layer."""
