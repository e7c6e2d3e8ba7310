"""How every view over the lake is declared.

DuckDB binds a view's query when a statement reads the view, whether or not it was bound at creation. Bound
at creation too, the views cost every reader (`verdict sql`, each UI snapshot, each daemon step) one bind of
the identity rule and a read of every segment's footer per view that reaches `spans`, for views most queries
never read (docs/collector.md, "The views' fixed cost"). Deferred, creating them parses their text only; an
error in a view (a segment that cannot be read) surfaces when a query reads it.
"""

from __future__ import annotations


def create_view(name: str, query: str) -> str:
    """The statement creating (or replacing) view `name` as `query`, bound when first read."""
    return f"CREATE OR REPLACE VIEW {name} WITH (DEFER_BINDING) AS\n{query}"
