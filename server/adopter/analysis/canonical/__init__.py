"""Canonical form: the table of spellings and the pass that gives every spelling of an op one form."""
