"""Eval runners for real agent runtimes: programs that follow the eval runner contract (docs/reference.md)."""
