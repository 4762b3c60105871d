-- COPY ... TO STDOUT (psql's \copy ... to, pg_dump's data): text and CSV,
-- HEADER, column lists, queries; what the client sees as records.
CREATE TABLE ct (id int PRIMARY KEY, name text, note varchar(20), amount numeric(6,2), at timestamp);
INSERT INTO ct VALUES (1, E'tab\there', E'line\nbreak', 12.5, '2024-01-02 03:04:05');
COPY ct TO STDOUT;
COPY ct (note, id) TO STDOUT;
COPY ct TO STDOUT WITH (FORMAT csv);
COPY ct TO STDOUT WITH (FORMAT csv, HEADER true, DELIMITER ';');
COPY ct TO STDOUT CSV HEADER;
INSERT INTO ct VALUES (2, E'back\\slash', NULL, NULL, NULL), (3, '', 'a,"b"', -1, NULL), (4, '\.', NULL, 0, NULL);
COPY (SELECT * FROM ct ORDER BY id) TO STDOUT;
COPY (SELECT * FROM ct ORDER BY id) TO STDOUT WITH (FORMAT csv, NULL 'NULL');
COPY (SELECT * FROM ct ORDER BY id) TO STDOUT WITH (FORMAT csv);
COPY (SELECT id, name || '!' AS shout FROM ct WHERE id > 2 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER);
COPY (SELECT count(*) FROM ct) TO STDOUT;
-- In a block: the block's own rows.
BEGIN;
DELETE FROM ct WHERE id > 1;
COPY ct (id) TO STDOUT;
ROLLBACK;
COPY (SELECT id FROM ct ORDER BY id) TO STDOUT;
-- A table without a primary key: its hidden row id is no column.
CREATE TABLE cl (msg text, n int);
INSERT INTO cl VALUES ('only', 1);
COPY cl TO STDOUT WITH (FORMAT csv, HEADER);
-- Errors.
COPY nope TO STDOUT;
COPY ct (nope) TO STDOUT;
COPY ct (id, id) TO STDOUT;
CREATE SEQUENCE cts;
COPY cts TO STDOUT;
SELECT 1;
DROP SEQUENCE cts;
DROP TABLE cl;
DROP TABLE ct;
