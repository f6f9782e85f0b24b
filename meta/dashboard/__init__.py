"""The RisingSpark dashboard, served by meta: streaming jobs and backfill progress, fragment graphs,
nodes with CPU and memory, barrier latency and storage, as a page at ``/`` over JSON endpoints under
``/api`` (`meta.dashboard.routes`)."""
