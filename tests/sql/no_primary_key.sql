-- Tables without a primary key (logs, histories, pgbench_history): keyed
-- by a hidden row id that nothing shows; ADD PRIMARY KEY later.
CREATE TABLE hist (tid int, bid int, delta int, mtime timestamp, filler char(22));
INSERT INTO hist VALUES (1, 1, 10, '2024-01-01 00:00:00', 'x');
INSERT INTO hist VALUES (1, 1, 10, '2024-01-01 00:00:00', 'x');
INSERT INTO hist (tid, delta) VALUES (2, -5), (3, NULL);
SELECT * FROM hist ORDER BY tid, delta;
SELECT count(*), sum(delta) FROM hist;
UPDATE hist SET delta = delta * 2 WHERE tid = 1;
SELECT tid, delta FROM hist ORDER BY tid, delta;
DELETE FROM hist WHERE tid = 2 RETURNING *;
INSERT INTO hist (tid) VALUES (4) RETURNING *;
SELECT h.tid, count(*) FROM hist h GROUP BY h.tid ORDER BY 1;
\d hist
SELECT attname, attnum FROM pg_attribute WHERE attrelid = 'hist'::regclass AND attnum > 0 ORDER BY attnum;
SELECT column_name FROM information_schema.columns WHERE table_name = 'hist' ORDER BY ordinal_position;
SELECT conname, contype FROM pg_constraint WHERE conrelid = 'hist'::regclass;
SELECT count(*) FROM pg_index WHERE indrelid = 'hist'::regclass;
-- No primary key to reference.
CREATE TABLE refs (id int PRIMARY KEY, h int REFERENCES hist);
-- ON CONFLICT needs a constraint to arbitrate.
INSERT INTO hist (tid) VALUES (5) ON CONFLICT (tid) DO NOTHING;
-- ADD PRIMARY KEY: NULLs and duplicates are refused, leaving nothing.
CREATE TABLE acc (aid int, bid int, abalance int, filler char(84)) WITH (fillfactor = 100);
INSERT INTO acc VALUES (1, 1, 0, ''), (2, 1, 0, ''), (3, 1, 0, '');
INSERT INTO acc (bid) VALUES (1);
ALTER TABLE acc ADD PRIMARY KEY (aid);
DELETE FROM acc WHERE aid IS NULL;
INSERT INTO acc VALUES (3, 2, 0, '');
ALTER TABLE acc ADD PRIMARY KEY (aid);
SELECT conname FROM pg_constraint WHERE conrelid = 'acc'::regclass;
DELETE FROM acc WHERE aid = 3 AND bid = 2;
ALTER TABLE acc ADD PRIMARY KEY (aid);
\d acc
ALTER TABLE acc ADD PRIMARY KEY (bid);
INSERT INTO acc VALUES (1, 9, 0, '');
INSERT INTO acc (bid) VALUES (9);
INSERT INTO acc VALUES (1, 9, 0, '') ON CONFLICT (aid) DO UPDATE SET abalance = acc.abalance + 1;
INSERT INTO acc VALUES (4, 9, 0, '') ON CONFLICT ON CONSTRAINT acc_pkey DO NOTHING;
UPDATE acc SET abalance = abalance + 5 WHERE aid = 2;
SELECT abalance FROM acc WHERE aid = 2;
UPDATE acc SET aid = 2 WHERE aid = 1;
SELECT * FROM acc ORDER BY aid;
CREATE TABLE refs (id int PRIMARY KEY, a int REFERENCES acc);
INSERT INTO refs VALUES (1, 4);
INSERT INTO refs VALUES (2, 5);
SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'acc'::regclass ORDER BY conname;
DROP TABLE refs;
ALTER TABLE acc DROP CONSTRAINT acc_pkey;
INSERT INTO acc VALUES (1, 9, 0, '');
SELECT count(*) FROM acc WHERE aid = 1;
\d acc
COPY hist (tid, delta) FROM stdin;
7	70
8	80
\.
SELECT tid, delta FROM hist WHERE tid > 6 ORDER BY tid;
INSERT INTO hist (tid, delta) SELECT tid + 10, delta FROM hist WHERE tid > 6;
INSERT INTO hist SELECT * FROM hist WHERE tid = 17;
SELECT tid, delta FROM hist WHERE tid > 6 ORDER BY tid;
-- Columns come and go around the hidden one.
ALTER TABLE hist ADD COLUMN note text;
ALTER TABLE hist ADD COLUMN w int DEFAULT 7;
ALTER TABLE hist DROP COLUMN filler;
ALTER TABLE hist RENAME COLUMN mtime TO at;
INSERT INTO hist VALUES (30, 1, 3, NULL, 'added', 8);
SELECT * FROM hist WHERE tid >= 17 ORDER BY tid, note;
CREATE INDEX hist_tid ON hist (tid);
CREATE UNIQUE INDEX hist_note ON hist (note);
SELECT tid FROM hist WHERE tid = 30;
DELETE FROM hist WHERE tid > 20;
TRUNCATE hist;
SELECT count(*) FROM hist;
\d hist
DROP TABLE hist;
DROP TABLE acc;
