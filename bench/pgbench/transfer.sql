\set aid random(1, 10000)
\set tid random(1, 100)
\set bid random(1, 10)
\set delta random(-5000, 5000)
\set hid random(1, 4000000000000)
BEGIN;
UPDATE bench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
UPDATE bench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE bench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO bench_history (hid, tid, bid, aid, delta) VALUES (:hid, :tid, :bid, :aid, :delta);
END;
