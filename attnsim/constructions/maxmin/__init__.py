"""Activation MaxMin (GroupSort with groups of 2): each pair of a row sorted, one gather head."""
