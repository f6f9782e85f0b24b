CREATE MATERIALIZED VIEW ranked AS SELECT * FROM (SELECT customer_id, ROW_NUMBER() OVER (PARTITION BY status ORDER BY amount) AS rn, amount * 2 AS double FROM orders WHERE id > 10) t WHERE rn < 2
