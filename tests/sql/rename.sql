-- ALTER {TABLE | INDEX} ... RENAME TO: tables, sequences and indexes take
-- new names; the rows, keys, indexes, foreign keys and serial columns follow.
CREATE TABLE authors (id serial PRIMARY KEY, email text UNIQUE, name text);
CREATE INDEX authors_name_idx ON authors (name);
CREATE TABLE books (id int PRIMARY KEY, author_id int REFERENCES authors ON DELETE CASCADE, title text);
INSERT INTO authors (email, name) VALUES ('a@x', 'Ann'), ('b@x', 'Bob');
INSERT INTO books VALUES (1, 1, 'one'), (2, 2, 'two');
ALTER TABLE authors RENAME TO writers;
SELECT * FROM writers ORDER BY id;
SELECT * FROM authors;
INSERT INTO writers (email, name) VALUES ('a@x', 'dup');
INSERT INTO writers (email, name) VALUES ('c@x', 'Cy') RETURNING id;
SELECT * FROM writers WHERE name = 'Cy';
INSERT INTO books VALUES (3, 99, 'orphan');
INSERT INTO books VALUES (3, 4, 'three');
DELETE FROM writers WHERE id = 1;
SELECT * FROM books ORDER BY id;
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'books'::regclass ORDER BY 1;
SELECT pg_get_serial_sequence('writers', 'id');
\d writers
-- the child renamed: its foreign key still holds
ALTER TABLE books RENAME TO titles;
INSERT INTO titles VALUES (4, 98, 'orphan');
DELETE FROM writers WHERE id = 2;
SELECT * FROM titles ORDER BY id;
\d titles
-- what is refused
ALTER TABLE nope RENAME TO x;
ALTER TABLE IF EXISTS nope RENAME TO x;
ALTER TABLE writers RENAME TO titles;
ALTER TABLE writers RENAME TO writers;
ALTER TABLE writers RENAME TO authors_pkey;
ALTER TABLE writers RENAME TO x, ADD COLUMN y int;
-- indexes: by ALTER INDEX, or by ALTER TABLE naming the index
ALTER INDEX authors_name_idx RENAME TO writers_name_idx;
ALTER TABLE authors_email_key RENAME TO writers_email_key;
ALTER INDEX authors_pkey RENAME TO writers_pkey;
ALTER INDEX nope RENAME TO x;
ALTER INDEX writers_pkey RENAME TO titles;
SELECT conname FROM pg_constraint WHERE conrelid = 'writers'::regclass ORDER BY 1;
SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'writers' ORDER BY 1;
INSERT INTO writers (email, name) VALUES ('c@x', 'dup');
SELECT name FROM writers WHERE name = 'Cy';
-- a sequence renamed as Rails renames it: the default follows
ALTER TABLE authors_id_seq RENAME TO writers_id_seq;
INSERT INTO writers (email, name) VALUES ('d@x', 'Di') RETURNING id;
SELECT pg_get_serial_sequence('writers', 'id');
\d writers
-- a table that references itself
CREATE TABLE emp (id int PRIMARY KEY, boss int REFERENCES emp);
INSERT INTO emp VALUES (1, NULL), (2, 1);
ALTER TABLE emp RENAME TO staff;
INSERT INTO staff VALUES (3, 9);
DELETE FROM staff WHERE id = 1;
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'staff'::regclass ORDER BY 1;
-- in a block: the new name is seen there, and ROLLBACK takes it back
BEGIN;
ALTER TABLE titles RENAME TO pages;
SELECT * FROM pages ORDER BY id;
SELECT * FROM titles;
ROLLBACK;
SELECT * FROM titles ORDER BY id;
SELECT * FROM pages;
BEGIN;
ALTER TABLE titles RENAME TO pages;
INSERT INTO pages VALUES (5, 4, 'five');
COMMIT;
SELECT * FROM pages ORDER BY id;
-- created and renamed in one block
BEGIN;
CREATE TABLE tmp1 (id int PRIMARY KEY);
INSERT INTO tmp1 VALUES (1);
ALTER TABLE tmp1 RENAME TO tmp2;
COMMIT;
SELECT * FROM tmp2;
-- a savepoint undoes a rename; a table created before it keeps its rows
BEGIN;
SAVEPOINT s;
ALTER TABLE tmp2 RENAME TO tmp3;
ROLLBACK TO SAVEPOINT s;
SELECT * FROM tmp2;
COMMIT;
SELECT * FROM tmp2;
BEGIN;
CREATE TABLE tmp4 (id int PRIMARY KEY);
INSERT INTO tmp4 VALUES (4);
SAVEPOINT s;
ALTER TABLE tmp4 RENAME TO tmp5;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM tmp4;
DROP TABLE tmp2, tmp4, pages, writers, staff;
