"""Compiled parts, each optional: pyproject.toml holds the metadata; an install without a C compiler still
works (each module's pure-Python fallback runs instead). `make` builds them in place."""

from setuptools import Extension, setup

_FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"]
# One list for every extension, so they are built the same way in one place.
EXTENSIONS = [
    # OTLP trace protobuf -> collector.spandata tuples (fallback: upb + spandata.from_message)
    Extension("collector._otlpdecode", ["collector/_otlpdecode.c"], optional=True, extra_compile_args=_FLAGS),
    # verdict.redact's detector-family gate (fallback: every scanner runs)
    Extension("verdict.redact._gate", ["verdict/redact/_gate.c"], depends=["verdict/redact/_gate_kind.h"],
              optional=True, extra_compile_args=_FLAGS),
]

setup(ext_modules=EXTENSIONS)
