"""The ops: each a small Function with forward and backward on NumPy arrays."""
