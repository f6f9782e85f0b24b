"""RisingWave's Nexmark schema and queries, shared by the end-to-end test (tests/e2e/test_nexmark.py)
and the benchmark (bench/nexmark.py, which puts tests/ on sys.path to import it).

``TABLES``: person, auction and bid in RisingWave's snake_case DDL (the column list of each
``CREATE TABLE``). ``QUERIES``: RisingWave's Nexmark materialized views by name (q0-q10, q14-q22,
q101-q106, and q5 again with unqualified columns); TUMBLE and HOP are RisingWave's time window table
functions. q14 calls a JavaScript function, ``count_char``, created before the views as RisingWave's
q14 file creates it (``COUNT_CHAR``); PostgreSQL gets the same function in SQL
(``COUNT_CHAR_ORACLE``).
"""

from __future__ import annotations

TABLES = {
    "person": "id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR, city VARCHAR, state VARCHAR, "
              "date_time TIMESTAMP, extra VARCHAR, PRIMARY KEY (id)",
    "auction": "id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, reserve BIGINT, "
               "date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR, "
               "PRIMARY KEY (id)",
    "bid": "auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, "
           "extra VARCHAR",
}

# q14's function, as RisingWave's e2e_test/streaming/nexmark/views/q14.slt.part creates it, and
# PostgreSQL's equivalent for the oracle.
COUNT_CHAR = """CREATE FUNCTION count_char(s varchar, c varchar) RETURNS int LANGUAGE javascript AS $$
    var count = 0;
    for (var cc of s) {
        if (cc === c) {
            count++;
        }
    }
    return count;
$$"""
COUNT_CHAR_ORACLE = ("CREATE OR REPLACE FUNCTION count_char(s text, c text) RETURNS int AS "
                     "$$ SELECT ((length(s) - length(replace(s, c, ''))) / length(c))::int $$ LANGUAGE sql")

# RisingWave's Nexmark views. The rankings (q6, q9, q18, q19) have one answer because the generated
# bid prices and times are unique; q105's LIMIT 1000 is above the number of auctions. q10 reads ``date_time`` (RisingWave's file still says ``dateTime``,
# the column of its old camel-case DDL).
QUERIES = {
    "q0": "SELECT auction, bidder, price, date_time FROM bid",
    "q1": "SELECT auction, bidder, 0.908 * price as price, date_time FROM bid",
    "q2": "SELECT auction, price FROM bid "
          "WHERE auction = 1007 OR auction = 1020 OR auction = 2001 OR auction = 2019 OR auction = 2087",
    "q3": """SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P on A.seller = P.id
WHERE A.category = 10 and (P.state = 'or' OR P.state = 'id' OR P.state = 'ca')""",
    "q4": """SELECT Q.category, AVG(Q.final) as avg
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category""",
    "q5": """SELECT AuctionBids.auction, AuctionBids.num
FROM (
  SELECT bid.auction, count(*) AS num, window_start AS starttime
  FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
  GROUP BY window_start, bid.auction
) AS AuctionBids
JOIN (
  SELECT max(CountBids.num) AS maxn, CountBids.starttime_c
  FROM (
    SELECT count(*) AS num, window_start AS starttime_c
    FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
    GROUP BY bid.auction, window_start
  ) AS CountBids
  GROUP BY CountBids.starttime_c
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn""",
    # q5 with its columns unqualified (RisingWave's q5 writes bid.auction): the same HOP windows
    "q5_unqualified": """SELECT AuctionBids.auction, AuctionBids.num
FROM (
  SELECT auction, count(*) AS num, window_start AS starttime
  FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
  GROUP BY window_start, auction
) AS AuctionBids
JOIN (
  SELECT max(CountBids.num) AS maxn, CountBids.starttime_c
  FROM (
    SELECT count(*) AS num, window_start AS starttime_c
    FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
    GROUP BY auction, window_start
  ) AS CountBids
  GROUP BY CountBids.starttime_c
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn""",
    "q6_group_top1": """SELECT Q.seller,
  AVG(Q.final) OVER (PARTITION BY Q.seller ORDER BY Q.date_time ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) as avg
FROM (
  SELECT ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price) as rank, A.seller, B.price as final,
    B.date_time
  FROM auction AS A, bid AS B
  WHERE A.id = B.auction and B.date_time between A.date_time and A.expires
) AS Q
WHERE Q.rank <= 1""",
    "q7": """SELECT B.auction, B.price, B.bidder, B.date_time
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as date_time
  FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)
  GROUP BY window_end
) B1 ON B.price = B1.maxprice
WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time""",
    "q8": """SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TUMBLE(person, date_time, INTERVAL '10' SECOND)
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM TUMBLE(auction, date_time, INTERVAL '10' SECOND)
  GROUP BY seller, window_start, window_end
) A ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime""",
    "q9": """SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller, category,
  auction, bidder, price, bid_date_time
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_date_time,
    ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
) tmp
WHERE rownum <= 1""",
    "q10": "SELECT auction, bidder, price, date_time, TO_CHAR(date_time, 'YYYY-MM-DD') as date, "
           "TO_CHAR(date_time, 'HH:MI') as time FROM bid",
    "q14": """SELECT
  auction,
  bidder,
  0.908 * price as price,
  CASE
    WHEN
      extract(hour from date_time) >= 8 AND
      extract(hour from date_time) <= 18
    THEN 'dayTime'
    WHEN
      extract(hour from date_time) <= 6 OR
      extract(hour from date_time) >= 20
    THEN 'nightTime'
    ELSE 'otherTime'
  END AS bidTimeType,
  date_time,
  count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000""",
    "q15": """SELECT to_char(date_time, 'YYYY-MM-DD') as "day", count(*) AS total_bids,
  count(*) filter (where price < 10000) AS rank1_bids,
  count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
  count(*) filter (where price >= 1000000) AS rank3_bids,
  count(distinct bidder) AS total_bidders,
  count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
  count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
  count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
  count(distinct auction) AS total_auctions,
  count(distinct auction) filter (where price < 10000) AS rank1_auctions,
  count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
  count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY to_char(date_time, 'YYYY-MM-DD')""",
    "q16": """SELECT channel, to_char(date_time, 'YYYY-MM-DD') as "day", max(to_char(date_time, 'HH:mm')) as "minute",
  count(*) AS total_bids,
  count(*) filter (where price < 10000) AS rank1_bids,
  count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
  count(*) filter (where price >= 1000000) AS rank3_bids,
  count(distinct bidder) AS total_bidders,
  count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
  count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
  count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
  count(distinct auction) AS total_auctions,
  count(distinct auction) filter (where price < 10000) AS rank1_auctions,
  count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
  count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY channel, to_char(date_time, 'YYYY-MM-DD')""",
    "q17": """SELECT auction, to_char(date_time, 'YYYY-MM-DD') AS day, count(*) AS total_bids,
  count(*) filter (where price < 10000) AS rank1_bids,
  count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
  count(*) filter (where price >= 1000000) AS rank3_bids,
  min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price, sum(price) AS sum_price
FROM bid
GROUP BY auction, to_char(date_time, 'YYYY-MM-DD')""",
    "q18": """SELECT auction, bidder, price, channel, url, date_time, extra
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC, extra) AS rank_number
  FROM bid
)
WHERE rank_number <= 1""",
    "q19": """SELECT * FROM
  (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10""",
    "q20": """SELECT auction, bidder, price, channel, url, B.date_time as bid_date_time, item_name, description,
  initial_bid, reserve, A.date_time as auction_date_time, expires, seller, category
FROM bid AS B INNER JOIN auction AS A on B.auction = A.id
WHERE A.category = 10""",
    "q21": """SELECT auction, bidder, price, channel,
  CASE
    WHEN LOWER(channel) = 'apple' THEN '0'
    WHEN LOWER(channel) = 'google' THEN '1'
    WHEN LOWER(channel) = 'facebook' THEN '2'
    WHEN LOWER(channel) = 'baidu' THEN '3'
    ELSE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2]
  END AS channel_id
FROM bid
WHERE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] is not null
  or LOWER(channel) in ('apple', 'google', 'facebook', 'baidu')""",
    "q22": "SELECT auction, bidder, price, channel, split_part(url, '/', 4) as dir1, split_part(url, '/', 5) as dir2, "
           "split_part(url, '/', 6) as dir3 FROM bid",
    "q101": """SELECT a.id AS auction_id, a.item_name AS auction_item_name, b.max_price AS current_highest_bid
FROM auction a
LEFT OUTER JOIN (SELECT b1.auction, MAX(b1.price) max_price FROM bid b1 GROUP BY b1.auction) b ON a.id = b.auction""",
    "q102": """SELECT a.id AS auction_id, a.item_name AS auction_item_name, COUNT(b.auction) AS bid_count
FROM auction a
JOIN bid b ON a.id = b.auction
GROUP BY a.id, a.item_name
HAVING COUNT(b.auction) >= (SELECT COUNT(*) / COUNT(DISTINCT auction) FROM bid)""",
    "q103": """SELECT a.id AS auction_id, a.item_name AS auction_item_name
FROM auction a
WHERE a.id IN (SELECT b.auction FROM bid b GROUP BY b.auction HAVING COUNT(*) >= 20)""",
    "q104": """SELECT a.id AS auction_id, a.item_name AS auction_item_name
FROM auction a
WHERE a.id NOT IN (SELECT b.auction FROM bid b GROUP BY b.auction HAVING COUNT(*) < 20)""",
    "q105": """SELECT a.id AS auction_id, a.item_name AS auction_item_name, COUNT(b.auction) AS bid_count
FROM auction a
JOIN bid b ON a.id = b.auction
GROUP BY a.id, a.item_name
ORDER BY bid_count DESC
LIMIT 1000""",
    "q106": """SELECT MIN(final) AS min_final
FROM (
  SELECT auction.id, MAX(price) AS final
  FROM auction, bid
  WHERE bid.auction = auction.id AND bid.date_time BETWEEN auction.date_time AND auction.expires
  GROUP BY auction.id
)""",
}
