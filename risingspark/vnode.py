"""Virtual nodes: ``vnode = hash(distribution key) % 256``, as RisingWave.

The hash is Spark's Murmur3 ``hash()`` over the distribution key cast to its declared type, so every
epoch round computes the same vnode for the same key; state tables are sorted by ``(vnode, pk)``.
Python never needs to recompute a vnode: every stored row carries its ``_vnode``.
"""

from __future__ import annotations

VNODE_COUNT = 256


def vnode_expr(columns: list[str] | tuple[str, ...], spark_types: list[str] | tuple[str, ...]) -> str:
    """The Spark SQL expression giving the vnode of a row.

    >>> vnode_expr(["id"], ["BIGINT"])
    'CAST(pmod(hash(CAST(`id` AS BIGINT)), 256) AS SMALLINT)'
    """
    if not columns:
        # A singleton distribution (e.g. a global aggregate): everything lives in vnode 0.
        return "CAST(0 AS SMALLINT)"
    args = ", ".join(f"CAST(`{c}` AS {t})" for c, t in zip(columns, spark_types, strict=True))
    return f"CAST(pmod(hash({args}), {VNODE_COUNT}) AS SMALLINT)"


def actor_vnodes(actor: int, parallelism: int) -> range:
    """The contiguous vnode range owned by `actor` of a fragment with `parallelism` actors."""
    return range(actor * VNODE_COUNT // parallelism, (actor + 1) * VNODE_COUNT // parallelism)
