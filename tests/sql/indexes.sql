-- Plain (non-unique) indexes, as migrations create them: named, found by
-- DROP INDEX, clashing with other relations' names; lookups by their
-- columns give what a scan gives, through updates, deletes and blocks.
CREATE TABLE author (id serial PRIMARY KEY, name varchar(100) NOT NULL, email varchar(254) UNIQUE);
CREATE INDEX author_name_idx ON author (name);
-- Django's _like index for a unique varchar column:
CREATE INDEX "author_email_like" ON "author" ("email" varchar_pattern_ops);
CREATE INDEX ON author (name, email);
CREATE INDEX IF NOT EXISTS author_name_idx ON author (name);
CREATE INDEX author_name_idx ON author (email);
CREATE INDEX author ON author (name);
CREATE INDEX CONCURRENTLY IF NOT EXISTS author_id_name ON author USING btree (id, name);
CREATE INDEX recent ON author (id) WHERE id > 10;
CREATE INDEX bad ON author (nope);
CREATE INDEX bad ON nope (name);
INSERT INTO author (name, email) VALUES ('Ann', 'ann@x'), ('Bob', 'bob@x'), ('Ann', 'ann2@x');
SELECT id, name FROM author WHERE name = 'Ann' ORDER BY id;
BEGIN;
CREATE INDEX CONCURRENTLY author_c ON author (name);
ROLLBACK;
-- In a block the index is part of the block: gone with ROLLBACK.
BEGIN;
CREATE INDEX author_in_block ON author (email);
ROLLBACK;
DROP INDEX author_in_block;
DROP INDEX author_name_idx, author_email_like;
DROP INDEX author_name_email_idx, author_id_name, recent;
DROP INDEX author_name_idx;
DROP INDEX IF EXISTS author_name_idx;
DROP INDEX author_pkey;
DROP TABLE author;

-- Lookups by an indexed column, before and after the rows change.
CREATE TABLE book (id integer PRIMARY KEY, author_id integer, title text, price numeric(6,2));
INSERT INTO book SELECT i, i % 5, 'book ' || i, i * 1.5 FROM generate_series(1, 40) i;
CREATE INDEX book_author_id_idx ON book (author_id);
CREATE INDEX book_title_price_idx ON book (title, price);
SELECT id, title FROM book WHERE author_id = 3 ORDER BY id;
SELECT count(*) FROM book WHERE author_id IN (1, 2, 1, NULL);
SELECT id FROM book WHERE author_id = ANY ('{4,9}') ORDER BY id;
SELECT id FROM book WHERE author_id = 3 AND id > 20 ORDER BY id;
SELECT id FROM book WHERE author_id = '3' ORDER BY id;
SELECT id FROM book WHERE author_id = 3.5;
SELECT id FROM book WHERE title = 'book 7' AND price = 10.5;
SELECT id FROM book WHERE title = 'book 7' AND price = 10.50;
SELECT id FROM book WHERE title = 'book 7' AND price = 10.4;
UPDATE book SET author_id = 3 WHERE id IN (1, 2);
UPDATE book SET author_id = NULL WHERE id = 3;
DELETE FROM book WHERE id = 8;
SELECT id FROM book WHERE author_id = 3 ORDER BY id;
SELECT id FROM book WHERE author_id IS NULL;
SELECT author_id, count(*) FROM book WHERE author_id IN (1, 2, 3) GROUP BY author_id ORDER BY 1;
BEGIN;
UPDATE book SET author_id = 9 WHERE author_id = 3;
SELECT id FROM book WHERE author_id = 9 ORDER BY id;
SELECT id FROM book WHERE author_id = 3 ORDER BY id;
ROLLBACK;
SELECT id FROM book WHERE author_id = 9 ORDER BY id;
SELECT id FROM book WHERE author_id = 3 ORDER BY id;
BEGIN;
CREATE INDEX book_price_idx ON book (price);
INSERT INTO book VALUES (41, 3, 'book 41', 10.5);
SELECT id FROM book WHERE price = 10.5 ORDER BY id;
COMMIT;
SELECT id FROM book WHERE price = 10.5 ORDER BY id;
SELECT b.id FROM book b JOIN book c ON c.author_id = b.author_id WHERE b.id = 4 ORDER BY 1, c.id;
TRUNCATE book;
SELECT id FROM book WHERE author_id = 3;
INSERT INTO book VALUES (1, 3, 'again', 1);
SELECT id, title FROM book WHERE author_id = 3;
DROP INDEX book_author_id_idx;
SELECT id, title FROM book WHERE author_id = 3;
DROP TABLE book;
