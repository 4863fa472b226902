"""Build the optional native hasher, ``ledger._native`` (everything else is in pyproject.toml).

It compiles ``ledger/_native.c`` against BLAKE3's official C implementation,
which is not vendored here: ``scripts/bootstrap`` unpacks it from Debian's
``librust-blake3-dev`` into ``.build/blake3-c`` (or point ``LEDGER_BLAKE3_C``
at any copy of BLAKE3's ``c/`` directory).  Without it, or if the compiler
fails, the package installs without the extension and ``ledger.bundle.merkle`` hashes
in pure Python: same roots, slower.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class _BuildExt(build_ext):
    """Accepts BLAKE3's assembly (.S) sources; ``optional=True`` turns a compile failure into a warning."""

    def build_extensions(self) -> None:
        self.compiler.src_extensions.append(".S")
        super().build_extensions()


def _extensions() -> list[Extension]:
    src = Path(os.environ.get("LEDGER_BLAKE3_C", ".build/blake3-c"))
    if not (src / "blake3.h").is_file():
        print(f"warning: no BLAKE3 C sources in {src}; ledger._native is not built", file=sys.stderr)
        return []
    sources = ["blake3.c", "blake3_dispatch.c", "blake3_portable.c"]
    macros: list[tuple[str, str | None]] = []
    if platform.machine() in ("x86_64", "AMD64") and sys.platform != "win32":
        sources += [f"blake3_{isa}_x86-64_unix.S" for isa in ("sse2", "sse41", "avx2", "avx512")]
    else:
        macros += [(f"BLAKE3_NO_{isa}", "1") for isa in ("SSE2", "SSE41", "AVX2", "AVX512")]
        if platform.machine() in ("aarch64", "arm64"):
            sources.append("blake3_neon.c")
            macros.append(("BLAKE3_USE_NEON", "1"))
    return [
        Extension(
            "ledger._native",
            sources=["ledger/_native.c", *(str(src / s) for s in sources)],
            include_dirs=[str(src)],
            define_macros=macros,
            extra_compile_args=["-O3", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            extra_link_args=["-pthread"],
            optional=True,
        )
    ]


setup(ext_modules=_extensions(), cmdclass={"build_ext": _BuildExt})
