"""min and max over an input state keyed by the input row, as RisingWave's min/max aggregation with
its `MaterializedInputState` cache (`executor/aggregate/minput.rs`).

An epoch's input reaches a call as signed counts per ``(_vnode, group key, value, input stream
key)`` (pre-aggregated in Spark, `compute.stream.dataflow`): +1 an input row that appeared, -1 one
that went. The state rows follow without a read — a row for +1, a tombstone for -1 — and each touched
group's result before and after the epoch comes from its run of extreme keys in the worker's cache
(`compute.cache.extreme_cache`): read before applying the epoch's rows, and after. A run the epoch
empties (it deleted every key the run held) is read again: the group's whole input state at the
previous epoch, with the epoch's rows applied.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from compute.cache.extreme_cache import ExtremeCache
from compute.executor.agg_input_state import InputFold
from compute.executor.materialize import _sst_part
from risingspark.aggregate import VALUE_COUNT
from risingspark.chunk import VNODE
from risingspark.storage.desc import SstableInfo
from risingspark.storage.memcmp import encode_keys
from risingspark.storage.reader import StateTableReader

if TYPE_CHECKING:
    from compute.executor.hash_agg import AggCallSpec


def extreme_state_rows(call: AggCallSpec, delta: pa.Table, epoch: int) -> pa.Table:
    """The SST rows of an epoch's signed counts: a row where an input row appeared, a tombstone where
    one went (a count of 0 changes nothing)."""
    assert call.input_state is not None
    desc = call.input_state
    values = delta.select(desc.names).cast(desc.value_schema())
    count = delta.column(VALUE_COUNT)
    added, gone = pc.greater(count, 0), pc.less(count, 0)
    return pa.concat_tables([_sst_part(values.filter(added), delta.column(VNODE).filter(added), epoch, False),
                             _sst_part(values.filter(gone), delta.column(VNODE).filter(gone), epoch, True)])


def fold_extreme(group_key: tuple[str, ...], call: AggCallSpec, groups: pa.Table, delta: pa.Table,
                 cache: ExtremeCache, reader: StateTableReader, ssts: Sequence[SstableInfo], prev_epoch: int,
                 epoch: int) -> InputFold:
    """Fold an epoch's signed counts of min/max (`delta`: ``_vnode``, group key, value, stream key,
    ``_count``) into the input state, and give the call's result before and after for each row of
    `groups` (``_vnode`` + group key). `cache` is synced to `prev_epoch`."""
    assert call.input_state is not None
    desc = call.input_state
    groups = groups.select([VNODE, *group_key]).cast(
        pa.schema([desc.sst_schema().field(n) for n in [VNODE, *group_key]]))
    prefixes = encode_keys(groups.column(VNODE), [groups.column(n) for n in group_key]).to_pylist()
    runs = cache.runs(reader, ssts, prev_epoch, groups)  # the task's own: held or not, they stay here
    before = [runs[p].extreme(cache.descending) for p in prefixes]
    state_rows = extreme_state_rows(call, delta, epoch)
    emptied = cache.apply_to(runs, state_rows)
    if emptied:
        # every key the run held went this epoch: read the whole group as it was, apply the epoch
        gone = set(emptied)
        reloaded = cache.load(reader, ssts, prev_epoch,
                              groups.take(pa.array([i for i, p in enumerate(prefixes) if p in gone], pa.int64())),
                              whole=True)
        cache.apply_to(reloaded, state_rows, settle_each_chunk=False)  # whole runs: nothing empties
        runs.update(reloaded)
    after = [runs[p].extreme(cache.descending) for p in prefixes]
    cache.keep(runs, epoch)
    arrow = call.return_type.to_arrow()
    return InputFold(state_rows, pa.array(before, arrow), pa.array(after, arrow))
