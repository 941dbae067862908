"""`attnsim report`: figures (matplotlib, Agg) and a report.md that embeds them."""
