"""Checkers used by the exercise notebooks (private: not part of the taught API)."""
