"""What a shell stage writes, shared by the shell reader and the class judges it consults
(:mod:`ledger.scanner.meaning.classes`): kept apart so neither imports the other back."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Flow"]


@dataclass
class Flow:
    """What a stage writes: its taints (fetch/decode/cred/env -> evidence) and, when literal, its text."""

    taint: dict[str, object] = field(default_factory=dict)
    text: str = ""

    def merged(self, other: Flow) -> Flow:
        return Flow({**self.taint, **other.taint}, (self.text + "\n" + other.text).strip("\n"))
