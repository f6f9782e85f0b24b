CREATE MATERIALIZED VIEW top3 AS SELECT id, customer_id, amount FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY amount DESC, id) AS rn FROM orders) t WHERE rn <= 3
