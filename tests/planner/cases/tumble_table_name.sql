CREATE MATERIALIZED VIEW m AS SELECT orders.id, window_start FROM TUMBLE(orders, created_at, INTERVAL '10' SECOND) WHERE orders.amount > 1
