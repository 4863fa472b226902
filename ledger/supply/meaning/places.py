"""Where secrets, persistence and trusted installers live: the knowledge every analyser shares (skeleton)."""

from __future__ import annotations

__all__: list[str] = []
