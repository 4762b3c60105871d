-- COPY ... FROM STDIN: text and CSV formats, HEADER, column lists, NULLs,
-- escapes, quoted fields; errors with their CONTEXT line; all rows or none,
-- and inside a block, the block's.
CREATE TABLE cp (id int PRIMARY KEY, name text UNIQUE, n numeric(5,2), at timestamptz, note varchar(5));
COPY cp FROM stdin;
1	alpha	1.5	2024-01-02 03:04:05+00	x
2	be\ttab	\N	\N	\N
3	new\nline	2.25	2024-05-06 00:00:00+00	abc
\.
SELECT * FROM cp ORDER BY id;
COPY cp (id, name) FROM stdin;
4	four
5	five
\.
COPY cp FROM stdin WITH (FORMAT csv, HEADER true);
id,name,n,at,note
6,"six, with comma",3,,""
7,"quote ""q""",,2024-01-01 00:00:00+00,
\.
SELECT id, name, n, note, note IS NULL AS null_note FROM cp ORDER BY id;
COPY cp FROM stdin;
8	dup	1	\N	\N
9	alpha	1	\N	\N
\.
SELECT count(*) FROM cp;
COPY cp FROM stdin;
10	ten	notanumber	\N	\N
\.
COPY cp FROM stdin;
11	eleven
\.
COPY cp FROM stdin;
12	twelve	1	\N	\N	extra
\.
COPY cp FROM stdin;
13	thirteen	1	\N	toolong
\.
COPY cp (id, nope) FROM stdin;
COPY nope FROM stdin;

BEGIN;
INSERT INTO cp (id, name) VALUES (20, 'twenty');
COPY cp (id, name) FROM stdin;
21	twenty-one
\.
SELECT count(*) FROM cp;
ROLLBACK;
SELECT count(*) FROM cp;
BEGIN;
COPY cp (id, name) FROM stdin;
22	alpha
\.
SELECT 1;
ROLLBACK;
COPY cp (id, name) FROM stdin CSV;
30,thirty
\.
SELECT id, name FROM cp WHERE id >= 20 ORDER BY id;
-- pgbench -i: TRUNCATE, then COPY ... WITH (FREEZE ON) in one block.
BEGIN;
TRUNCATE cp;
COPY cp (id, name) FROM stdin WITH (freeze on, header off);
40	forty
\.
COMMIT;
SELECT id, name FROM cp;
DROP TABLE cp;
