CREATE MATERIALIZED VIEW m AS WITH c AS CHANGELOG FROM public.events
SELECT changelog_op, count(*) AS n, max(v) AS top, max(_changelog_row_id) AS last_id FROM c GROUP BY changelog_op
