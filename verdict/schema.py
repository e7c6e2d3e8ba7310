"""Alias of the seed's `verdict.schema`: Schema lives in `verdict.graph.schema`."""

from verdict.graph.schema import Schema

__all__ = ["Schema"]
