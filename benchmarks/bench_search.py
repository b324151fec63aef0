"""Search quality and speed, full text (BM25) alone vs hybrid (BM25 + meaning, RRF).

    .venv/bin/python benchmarks/bench_search.py            # quality + latency at 100,000
    .venv/bin/python benchmarks/bench_search.py --quick    # quality + latency at 2,000

Quality: the labelled set in ``search_set.py`` (200 memories; 50 questions in
other words than their answer, 50 sharing words) → recall@5 and MRR (over the
top 10) for ``mode="fts"`` and ``mode="hybrid"``, through ``Vault.search_memory``.

Speed: a vault of N generated memories (``bench_vault.generate``), indexed,
each given a unit vector. Those vectors are random (embedding 100,000 texts
would take an hour here and the cost of a search does not depend on their
values); the query is embedded for real by the model on every search. Figures
are medians of many calls; the machine is shared, so they are noisy.

The model is the one in ``AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR``, else the
ONNX all-MiniLM-L6-v2 that the dev extra's test packages ship.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from agent_mem_vault.vault import EmbeddingSettings, Vault  # noqa: E402
from agent_mem_vault.vault.index.db import Index  # noqa: E402
from agent_mem_vault.vault.index.embeddings import find_model_files, open_embedder  # noqa: E402
from agent_mem_vault.vault.index.vectors import (  # noqa: E402
    VectorCache,
    ensure_vector_schema,
    memories_by_rowid,
    rrf_fuse,
    store_vectors,
)
from bench_vault import generate  # noqa: E402
from search_set import ANSWERS, distractors  # noqa: E402

NS = "project/bench"
_WORD = re.compile(r"\w+")


def model_dir(tmp: Path) -> Path:
    given = os.environ.get("AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR")
    if given and find_model_files(Path(given)):
        return Path(given)
    from tests.vault.embedding_model import model_folder

    return model_folder(tmp / "model")


def check_set() -> None:
    """The paraphrased questions really share no word with their answer."""
    for title, content, paraphrase, _shared in ANSWERS:
        words = {w.lower() for w in _WORD.findall(f"{title} {content}")}
        common = words & {w.lower() for w in _WORD.findall(paraphrase)}
        assert not common, (title, common)


def quality(tmp: Path, settings: EmbeddingSettings) -> dict[str, dict[str, tuple[float, float]]]:
    check_set()
    vault = Vault(tmp / "quality", durable=False, embeddings=settings)
    vault.init()
    ids = []
    for title, content in distractors():
        vault.save_memory(namespace=NS, title=title, content=content)
    for title, content, _p, _s in ANSWERS:
        ids.append(vault.save_memory(namespace=NS, title=title, content=content).id)
    vault.embed_pending()
    out: dict[str, dict[str, tuple[float, float]]] = fusion_choices(vault, settings, ids)
    for label, column in (("paraphrased", 2), ("shared words", 3)):
        out[label] = {}
        for mode in ("fts", "hybrid"):
            hits5 = 0
            rr = 0.0
            for answer_id, item in zip(ids, ANSWERS, strict=True):
                found = vault.search_memory(query=item[column], namespace=NS, limit=10, mode=mode)
                ranked = [h.memory.id for h in found]
                if answer_id in ranked:
                    rank = ranked.index(answer_id) + 1
                    hits5 += rank <= 5
                    rr += 1.0 / rank
            out[label][mode] = (hits5 / len(ANSWERS), rr / len(ANSWERS))
    vault.close()
    return out


def fusion_choices(
    vault: Vault, settings: EmbeddingSettings, ids: list[str]
) -> dict[str, dict[str, tuple[float, float]]]:
    """The fusions weighed against each other, from the two rankings themselves.

    ``words`` is BM25 as ``fts`` mode ranks (all words, else any word);
    ``meaning`` the nearest vectors. Chosen (``hybrid`` below): RRF of the
    all-words matches and meaning; any-word matches only follow.
    """
    embedder = open_embedder(settings)
    cache = vault._semantic.cache
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for label, column in (("paraphrased", 2), ("shared words", 3)):
        scores: dict[str, list[float]] = {}
        for answer_id, item in zip(ids, ANSWERS, strict=True):
            query = item[column]
            words = [h.memory.id for h in vault.search_memory(query=query, mode="fts", limit=50)]
            vector = embedder.embed([query])[0]
            near = nearest(vault, cache, vector)
            by_rowid = vault._query(lambda idx: memories_by_rowid(idx.conn, [r for r, _ in near]))  # noqa: B023
            meaning = [by_rowid[r].id for r, _ in near if r in by_rowid]
            variants = {
                "meaning only": meaning,
                "RRF k=60, any-word matches fused": [k for k, _ in rrf_fuse([words, meaning])],
                "RRF k=10, any-word matches fused": [
                    k for k, _ in rrf_fuse([words, meaning], k=10)
                ],
                "RRF k=60, any-word matches at weight 0.5": [
                    k for k, _ in rrf_fuse([words, meaning], weights=[0.5, 1.0])
                ],
            }
            for name, ranked in variants.items():
                top = ranked[:10]
                rank = top.index(answer_id) + 1 if answer_id in top else 0
                acc = scores.setdefault(name, [0.0, 0.0])
                acc[0] += 1 <= rank <= 5
                acc[1] += 1.0 / rank if rank else 0.0
        out[f"{label} (fusion choices)"] = {
            name: (acc[0] / len(ANSWERS), acc[1] / len(ANSWERS)) for name, acc in scores.items()
        }
    return out


def nearest(vault: Vault, cache: VectorCache, vector: Any) -> list[tuple[int, float]]:
    def run(idx: Index) -> list[tuple[int, float]]:
        return cache.nearest(
            idx.conn, vector, namespace=None, kind=None, tags=(), limit=50, min_similarity=-1
        )

    return vault._query(run)


def embedding_cost(settings: EmbeddingSettings) -> float:
    """Median ms to embed one memory, one at a time (as after one save)."""
    embedder = open_embedder(settings)
    texts = [f"{t}\n{c}" for t, c, _p, _s in ANSWERS]
    embedder.embed(texts[:1])  # load the model
    samples = []
    for text in texts:
        start = time.perf_counter()
        embedder.embed([text])
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def prepare(cache: Path, model: str, n: int) -> dict[str, float]:
    """The vault of ``n`` generated memories with random unit vectors, made once in ``cache``.

    Making it takes minutes; it is kept (outside the repository, or in the
    ignored ``.benchmarks/``) so that re-runs start at once. Returns the sizes.
    """
    import json

    import numpy as np

    done = cache / "sizes.json"
    if done.is_file() and json.loads(done.read_text()).get("model") == model:
        # An index of an older layout is rebuilt when opened, without its vectors:
        # the cache holds only while every memory still has one.
        check = Vault(cache / "vault", durable=False, embeddings=EmbeddingSettings(backend="off"))
        conn = check._upkeep.handle().conn
        try:
            kept = conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
        except Exception:
            kept = 0
        check.close()
        if kept >= n:
            return {k: v for k, v in json.loads(done.read_text()).items() if k != "model"}
    shutil.rmtree(cache, ignore_errors=True)
    root = cache / "vault"
    generate(root, 0, n)
    off = Vault(root, durable=False, embeddings=EmbeddingSettings(backend="off"))
    off.reindex()
    idx = off._upkeep.handle()
    rng = np.random.default_rng(1)
    with idx.transaction():
        ensure_vector_schema(idx.conn, model)
        rowids = [r[0] for r in idx.conn.execute("SELECT rowid FROM vector_queue ORDER BY rowid")]
        for start in range(0, len(rowids), 5000):
            chunk = rowids[start : start + 5000]
            vectors = rng.standard_normal((len(chunk), 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store_vectors(idx.conn, model, chunk, vectors)
    stored = idx.conn.execute("SELECT count(*), sum(length(vec)) FROM memory_vectors").fetchone()
    sizes = {"vector bytes per memory (BLOB)": stored[1] / max(stored[0], 1)}
    try:
        pages = idx.conn.execute(
            "SELECT sum(pgsize) FROM dbstat "
            "WHERE name IN ('memory_vectors', 'memory_vectors_seq', 'vector_queue')"
        ).fetchone()[0]
        sizes["vector table bytes per memory (pages)"] = pages / max(stored[0], 1)
    except Exception:
        pass
    off.close()
    done.write_text(json.dumps({**sizes, "model": model}))
    return sizes


def working_copy(cache: Path, tmp: Path) -> Path:
    """A copy of the cached vault to change: notes hard-linked (a save writes new
    files, never into old ones), the index copied."""
    root = tmp / "scale"
    shutil.rmtree(root, ignore_errors=True)

    def copy(src: str, dst: str) -> object:
        if src.endswith(".md"):
            os.link(src, dst)
            return dst
        return shutil.copy2(src, dst)

    shutil.copytree(cache / "vault", root, copy_function=copy)
    return root


def latency(tmp: Path, settings: EmbeddingSettings, n: int, cache: Path) -> dict[str, float]:
    model = open_embedder(settings).model
    sizes = prepare(cache, model, n)
    root = working_copy(cache, tmp)
    vault = Vault(root, durable=False, embeddings=settings, rescan_interval=None)
    queries = [p for _t, _c, p, _s in ANSWERS]
    t_first = time.perf_counter()
    vault.search_memory(query=queries[0], mode="hybrid")  # model load + vectors into memory
    first = (time.perf_counter() - t_first) * 1000
    results: dict[str, float] = {"first hybrid search (loads model and vectors)": first}
    results["fts search median"] = timed(vault, queries, mode="fts")
    results["hybrid search median"] = timed(vault, queries, mode="hybrid")
    results["  its CPU time (all threads), median"] = timed(vault, queries, cpu=True, mode="hybrid")
    results["hybrid search, same query again (vector cached, e.g. next page)"] = timed(
        vault, queries, cached=True, mode="hybrid"
    )
    results["hybrid search, namespace + kind filter, median"] = timed(vault, queries, **FILTER)
    results["fts search, namespace + kind filter, median"] = timed(
        vault, queries, **{**FILTER, "mode": "fts"}
    )
    # Above, every call with a namespace first checks that namespace's notes for
    # edits by hand, one stat per note (10,000 here), as a script or a CLI
    # command does; the MCP server watches the folder instead (``serve``).
    watched = Vault(root, durable=False, embeddings=settings, rescan_interval=None)
    if watched.watch(wait=60):
        watched.search_memory(query=queries[0], mode="hybrid")
        results["MCP server (watcher): hybrid search, namespace + kind filter, median"] = timed(
            watched, queries, **FILTER
        )
        results["MCP server (watcher): fts search, namespace + kind filter, median"] = timed(
            watched, queries, **{**FILTER, "mode": "fts"}
        )
    watched.close()
    # Random vectors rarely pass the similarity floor, so the searches above may
    # also run the any-word BM25 query; with real vectors meaning usually fills
    # the page. Both are measured.
    full = Vault(
        root,
        durable=False,
        embeddings=dataclasses.replace(settings, min_similarity=-1.0),
        rescan_interval=None,
    )
    full.search_memory(query=queries[0], mode="hybrid")
    results["hybrid search when meaning fills the page, median"] = timed(full, queries)
    results["  same, namespace + kind filter"] = timed(full, queries, **FILTER)
    full.close()
    samples = []
    for i, q in enumerate(queries[:30]):
        vault.save_memory(namespace="project/new", title=f"New {i}", content=q)
        vault._semantic.queries.clear()
        t0 = time.perf_counter()
        vault.search_memory(query=q, mode="hybrid")  # embeds the new memory, appends its vector
        samples.append((time.perf_counter() - t0) * 1000)
    results["hybrid search right after a save (embeds it first), median"] = statistics.median(
        samples
    )
    embedder = open_embedder(settings)
    embedder.embed(["warm"])
    samples = []
    for q in queries:
        t0 = time.perf_counter()
        embedder.embed([q])
        samples.append((time.perf_counter() - t0) * 1000)
    results["of which: embedding the query, median"] = statistics.median(samples)
    vector = embedder.embed([queries[0]])[0]
    samples = []
    for _ in range(50):
        t0 = time.perf_counter()
        nearest(vault, vault._semantic.cache, vector)
        samples.append((time.perf_counter() - t0) * 1000)
    results["of which: nearest 50 of all vectors (exact), median"] = statistics.median(samples)
    results.update(sizes)
    vault.close()
    return results


FILTER: dict[str, Any] = {"mode": "hybrid", "namespace": "project/service-3", "kind": "note"}
"""About 2,500 of the 100,000 generated memories (10 namespaces, 4 kinds)."""


def timed(
    vault: Vault, queries: list[str], *, cached: bool = False, cpu: bool = False, **kw: Any
) -> float:
    """Median ms of ``search_memory`` over the questions, three times each.

    The query vectors a vault keeps are forgotten before each call unless
    ``cached``, so that every search embeds its query. ``cpu``: the process's
    CPU time instead of the wall clock (less disturbed by other processes).
    """
    clock = time.process_time if cpu else time.perf_counter
    samples = []
    for _ in range(3):
        for q in queries:
            if not cached:
                vault._semantic.queries.clear()
            t0 = clock()
            vault.search_memory(query=q, **kw)
            samples.append((clock() - t0) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 memories for the latency part")
    parser.add_argument("--memories", type=int, help="memories for the latency part")
    parser.add_argument(
        "--cache",
        type=Path,
        help="where the generated vault is kept between runs "
        "(default: .benchmarks/search-N in the repository, which git ignores)",
    )
    parser.add_argument(
        "--only", choices=("quality", "latency"), help="run one part (default: both)"
    )
    args = parser.parse_args()
    n = args.memories or (2_000 if args.quick else 100_000)
    cache = args.cache or HERE.parent / ".benchmarks" / f"search-{n}"
    tmp = Path(tempfile.mkdtemp(prefix="bench-search-"))
    try:
        settings = EmbeddingSettings(backend="local", model_dir=model_dir(tmp))
        print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
        if args.only != "latency":
            print(f"Labelled set: {len(ANSWERS) + len(distractors())} memories, 50 + 50 questions")
            print(f"{'questions':<30} {'mode':<42} {'recall@5':>9} {'MRR':>6}")
            for label, modes in quality(tmp, settings).items():
                for mode, (recall, mrr) in modes.items():
                    print(f"{label:<30} {mode:<42} {recall:>9.2f} {mrr:>6.2f}")
            print(f"embedding one memory: {embedding_cost(settings):.1f} ms median")
        if args.only != "quality":
            print(f"At {n:,} memories:")
            for name, value in latency(tmp, settings, n, cache).items():
                print(f"  {name}: {value:.1f}")
        print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
