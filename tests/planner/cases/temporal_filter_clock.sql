CREATE MATERIALIZED VIEW m AS SELECT page, ts FROM clicks WHERE ts > now() - INTERVAL '1 day 02:00:00' AND ts + '30 minutes'::interval <= now()
