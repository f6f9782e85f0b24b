CREATE MATERIALIZED VIEW orders_summary AS SELECT customer_id, COUNT(*) AS order_count, SUM(amount) AS total_amount FROM orders WHERE status <> 'cancelled' GROUP BY customer_id
