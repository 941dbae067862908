"""The generalized gather and sum forms U is built from
(gathered transpose and permute, broadcast gather, consumer matmul, two-axis sum).
"""
