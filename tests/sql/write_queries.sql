-- Writes that take their rows from a query: INSERT ... SELECT (what
-- SQLAlchemy's insertmanyvalues and Django's bulk_create send), UPDATE ...
-- FROM, DELETE ... USING, and UPDATE / DELETE with subqueries.
CREATE TABLE authors (id serial PRIMARY KEY, name text UNIQUE NOT NULL, books integer DEFAULT 0);
CREATE TABLE imports (id integer PRIMARY KEY, author text, title text, pages integer);
INSERT INTO authors (name) VALUES ('Ann'), ('Bob'), ('Cy');
INSERT INTO imports VALUES (1, 'Ann', 'Alpha', 100), (2, 'Bob', 'Beta', 200), (3, 'Bob', 'Gamma', 300), (4, 'Dee', 'Delta', 400);
-- INSERT ... SELECT from a table (the fast path's query), defaults drawn per row.
INSERT INTO authors (name) SELECT author FROM imports WHERE id = 4 RETURNING *;
-- SQLAlchemy 2's insertmanyvalues, rows and RETURNING in sen_counter order.
INSERT INTO authors (name, books) SELECT p0::VARCHAR, p1::INTEGER FROM (VALUES ('Eve', 5, 0), ('Fay', 6, 1), ('Gus', 7, 2)) AS imp_sen(p0, p1, sen_counter) ORDER BY sen_counter RETURNING authors.id, authors.id AS id__1;
-- Django 5.2's bulk_create.
INSERT INTO authors (name, books) SELECT * FROM UNNEST(ARRAY['Hal', 'Ivy']::varchar[], ARRAY[8, 9]::integer[]) RETURNING authors.id;
-- Joins, aggregates, set operations and VALUES as sources.
CREATE TABLE totals (author text PRIMARY KEY, titles integer, pages bigint);
INSERT INTO totals SELECT author, count(*), sum(pages) FROM imports GROUP BY author;
INSERT INTO totals (author) SELECT a.name FROM authors a LEFT JOIN imports i ON i.author = a.name WHERE i.id IS NULL ORDER BY a.name RETURNING author, titles;
INSERT INTO totals (author, titles) SELECT 'x', 1 UNION ALL SELECT 'y', 2;
INSERT INTO totals VALUES ((SELECT max(title) FROM imports), 0, 0);
SELECT * FROM totals ORDER BY author;
-- No column list: the first columns take the items, the rest their defaults.
INSERT INTO totals SELECT 'z';
SELECT * FROM totals WHERE author = 'z';
-- A duplicate among the rows, or against a row there: nothing is inserted.
INSERT INTO authors (name) SELECT author FROM imports ORDER BY id;
INSERT INTO authors (name) SELECT 'New' UNION ALL SELECT 'New';
SELECT count(*) FROM authors;
-- ON CONFLICT with a query's rows.
INSERT INTO authors (name) SELECT DISTINCT author FROM imports ON CONFLICT (name) DO UPDATE SET books = authors.books + 1;
SELECT name, books FROM authors ORDER BY name;
INSERT INTO authors (name) SELECT author FROM imports ON CONFLICT DO NOTHING;
-- Errors, where PostgreSQL points.
INSERT INTO totals (author, titles) SELECT 'q', 1, 2;
INSERT INTO totals (author, titles) SELECT 'q';
INSERT INTO totals (author, titles) VALUES ('q', 1, 2);
INSERT INTO totals (author, titles) VALUES ('q');
INSERT INTO totals (author) SELECT NULL;
INSERT INTO totals SELECT * FROM nowhere;
-- Inside a block: the block's own rows are read and written, and ROLLBACK takes them back.
BEGIN;
INSERT INTO imports SELECT id + 10, author, title || '2', pages FROM imports;
INSERT INTO totals (author, titles) SELECT author || '-b', count(*) FROM imports GROUP BY author;
SELECT * FROM totals WHERE author LIKE '%-b' ORDER BY author;
ROLLBACK;
SELECT count(*) FROM imports;
SELECT count(*) FROM totals;
-- UPDATE ... FROM: each target row updated once, with values from the join.
UPDATE authors SET books = t.titles FROM totals t WHERE t.author = authors.name;
SELECT name, books FROM authors ORDER BY name;
UPDATE authors a SET books = a.books + i.pages FROM imports i WHERE i.author = a.name AND i.pages > 350 RETURNING a.name, a.books;
UPDATE authors a SET books = a.books + i.pages FROM imports i WHERE i.author = a.name AND i.pages > 150;
UPDATE authors SET books = 0 FROM imports WHERE imports.author = 'nobody';
-- UPDATE with subqueries in WHERE and in SET.
UPDATE authors SET books = (SELECT count(*) FROM imports WHERE imports.author = authors.name) WHERE name IN (SELECT author FROM imports);
SELECT name, books FROM authors ORDER BY name;
UPDATE authors SET books = DEFAULT WHERE EXISTS (SELECT 1 FROM imports WHERE imports.author = authors.name AND pages > 350);
UPDATE totals SET titles = titles + 1 WHERE author = ANY (SELECT name FROM authors WHERE books > 1);
SELECT name, books FROM authors ORDER BY name;
-- A unique violation through UPDATE ... FROM: nothing is updated.
UPDATE authors SET name = 'Ann' FROM imports WHERE imports.author = authors.name AND imports.id > 1;
SELECT name FROM authors ORDER BY name;
-- DELETE ... USING and with subqueries.
-- (No RETURNING of several rows here: without ORDER BY their order is the
-- store's, Cassandra's token order, as PostgreSQL's is its heap's.)
DELETE FROM totals USING imports WHERE imports.author = totals.author AND imports.pages >= 300;
SELECT * FROM totals ORDER BY author;
DELETE FROM totals t USING authors a WHERE a.name = t.author AND a.books = 0;
DELETE FROM totals t USING authors a WHERE a.name = t.author AND a.name = 'Dee' RETURNING t.*;
DELETE FROM totals WHERE author IN (SELECT name FROM authors WHERE books > 5);
DELETE FROM totals WHERE NOT EXISTS (SELECT 1 FROM imports WHERE imports.author = totals.author);
SELECT * FROM totals ORDER BY author;
-- Errors: an ambiguous column, a column that is not there.
UPDATE authors SET books = id FROM imports;
DELETE FROM totals USING imports WHERE author = 'Ann';
SELECT name, books FROM authors ORDER BY name;
DROP TABLE authors;
DROP TABLE imports;
DROP TABLE totals;
