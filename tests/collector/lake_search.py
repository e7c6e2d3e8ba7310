"""Look for raw strings anywhere under a data dir: every file's bytes, and every Parquet column decoded."""

from __future__ import annotations

from pathlib import Path


def parquet_text(path: Path) -> str:
    import duckdb

    con = duckdb.connect()
    try:
        cols = [r[0] for r in con.execute("SELECT name FROM parquet_schema(?) WHERE num_children IS NULL OR "
                                          "num_children = 0", [str(path)]).fetchall()]
        rows = con.execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
    finally:
        con.close()
    return "\n".join(" ".join(map(str, row)) for row in rows) + "\n" + " ".join(cols)


def find_secrets(data_dir: Path, secrets, extra_text: str = "") -> list[str]:
    """["<file>: <secret>"] for every secret found (an empty list is the passing outcome)."""
    found = []
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    assert files, f"nothing under {data_dir} to search"
    for path in files:
        data = path.read_bytes()
        texts = [data.decode("utf-8", "replace")]
        if path.suffix == ".parquet":
            texts.append(parquet_text(path))
        found += [f"{path.relative_to(data_dir)}: {s}" for s in secrets if any(s in t for t in texts)]
    return found + [f"collector log: {s}" for s in secrets if s in extra_text]
