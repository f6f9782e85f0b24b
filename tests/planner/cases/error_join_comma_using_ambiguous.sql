CREATE MATERIALIZED VIEW m AS SELECT user_id FROM visits a, visits b JOIN visits c USING (user_id)
