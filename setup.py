"""Compiled parts of the collector, each optional: pyproject.toml holds the metadata; an install without a
C compiler still works (each module's pure-Python fallback runs instead)."""

from setuptools import Extension, setup

# One list for every extension, so they are built the same way in one place.
EXTENSIONS = [
    # OTLP trace protobuf -> collector.spandata tuples (fallback: upb + spandata.from_message)
    Extension("collector._otlpdecode", ["collector/_otlpdecode.c"], optional=True,
              extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"]),
]

setup(ext_modules=EXTENSIONS)
