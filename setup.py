"""Compiled parts, all optional: each has a pure-Python fallback, so an install without a C compiler
still works (metadata and packages are in pyproject.toml). `make` builds them in place."""

from setuptools import Extension, setup

EXTENSIONS = [
    # verdict.redact's detector-family gate (verdict/redact/_gate.c; fallback: every scanner runs)
    Extension("verdict.redact._gate", ["verdict/redact/_gate.c"], depends=["verdict/redact/_gate_kind.h"], optional=True),
]

setup(ext_modules=EXTENSIONS)
