CREATE TABLE author (id integer PRIMARY KEY, name text NOT NULL, country text);
CREATE TABLE book (id integer PRIMARY KEY, title text NOT NULL, author_id integer, year integer, pages integer, price numeric);
CREATE TABLE review (id integer PRIMARY KEY, book_id integer NOT NULL, stars smallint, reviewer text);
INSERT INTO author VALUES (1, 'Le Guin', 'US'), (2, 'Lem', 'PL'), (3, 'Tokarczuk', 'PL'), (4, 'Borges', NULL);
INSERT INTO book VALUES (10, 'The Dispossessed', 1, 1974, 387, 12.5), (11, 'A Wizard of Earthsea', 1, 1968, 183, 9.3), (12, 'Solaris', 2, 1961, 204, 11), (13, 'The Cyberiad', 2, 1965, 295, NULL), (14, 'Flights', 3, 2007, 403, 15.75), (15, 'Anonymous', NULL, 2001, NULL, 3);
INSERT INTO review VALUES (100, 10, 5, 'ann'), (101, 10, 4, 'bob'), (102, 12, 5, 'ann'), (103, 14, 3, NULL), (104, 14, 4, 'cid'), (105, 13, 2, 'bob');
-- joins
SELECT b.title, a.name FROM book b JOIN author a ON b.author_id = a.id ORDER BY b.id;
SELECT b.title, a.name FROM book b INNER JOIN author a ON a.id = b.author_id WHERE a.country = 'PL' ORDER BY b.title;
SELECT a.name, b.title FROM author a LEFT JOIN book b ON b.author_id = a.id ORDER BY a.id, b.id;
SELECT a.name, b.title FROM book b RIGHT JOIN author a ON b.author_id = a.id ORDER BY a.id, b.id;
SELECT a.name, b.title FROM author a FULL JOIN book b ON b.author_id = a.id ORDER BY a.name NULLS FIRST, b.title;
SELECT x.title, y.title FROM book x JOIN book y ON x.author_id = y.author_id AND x.id < y.id ORDER BY x.id, y.id;
SELECT a.name, b.title, r.stars FROM author a JOIN book b ON b.author_id = a.id JOIN review r ON r.book_id = b.id ORDER BY r.id;
SELECT a.name, b.title FROM author a, book b WHERE a.id = b.author_id AND b.year < 1970 ORDER BY 2;
SELECT * FROM author a JOIN book b ON b.author_id = a.id WHERE b.id = 12;
SELECT count(*) FROM author a CROSS JOIN book b;
SELECT a.id, b.id FROM author a JOIN book b USING (id);
-- aggregates, GROUP BY, HAVING
SELECT author_id, count(*), sum(pages), min(year), max(title) FROM book GROUP BY author_id ORDER BY author_id NULLS FIRST;
SELECT a.name, count(b.id) AS books FROM author a LEFT JOIN book b ON b.author_id = a.id GROUP BY a.name ORDER BY books DESC, a.name;
SELECT author_id, sum(pages) FROM book GROUP BY author_id HAVING sum(pages) > 400 ORDER BY 1;
SELECT country, count(*) FROM author GROUP BY country ORDER BY country;
SELECT sum(stars), min(stars), max(stars) FROM review;
SELECT sum(pages) / count(pages) AS mean, count(DISTINCT author_id) FROM book;
SELECT book_id, count(*) FILTER (WHERE stars >= 4) AS good FROM review GROUP BY book_id ORDER BY book_id;
SELECT max(price), min(price), sum(price) FROM book;
SELECT author_id, avg(pages), avg(year) FILTER (WHERE year > 1965) FROM book GROUP BY author_id ORDER BY 1;
SELECT string_agg(name, ', ' ORDER BY name) FROM author;
SELECT bool_and(stars > 1), bool_or(stars = 5) FROM review;
-- DISTINCT
SELECT DISTINCT country FROM author ORDER BY country;
SELECT DISTINCT author_id FROM book WHERE author_id IS NOT NULL ORDER BY 1 DESC;
SELECT DISTINCT reviewer, stars FROM review ORDER BY reviewer, stars;
-- subqueries
SELECT title FROM book WHERE author_id IN (SELECT id FROM author WHERE country = 'PL') ORDER BY title;
SELECT title FROM book WHERE author_id NOT IN (SELECT id FROM author WHERE country = 'PL') ORDER BY title;
SELECT name FROM author a WHERE EXISTS (SELECT 1 FROM book b WHERE b.author_id = a.id AND b.year > 2000) ORDER BY name;
SELECT name FROM author a WHERE NOT EXISTS (SELECT 1 FROM book b WHERE b.author_id = a.id) ORDER BY name;
SELECT title, (SELECT max(name) FROM author a WHERE a.id = b.author_id) AS author FROM book b ORDER BY id;
SELECT title FROM book WHERE pages > (SELECT avg(pages) FROM book) ORDER BY title;
SELECT (SELECT max(year) FROM book);
SELECT b.title, (SELECT count(*) FROM review r WHERE r.book_id = b.id) AS reviews FROM book b ORDER BY b.id;
SELECT t.author_id, t.n FROM (SELECT author_id, count(*) AS n FROM book GROUP BY author_id) t WHERE t.n > 1 ORDER BY 1;
-- CTEs
WITH prolific AS (SELECT author_id FROM book GROUP BY author_id HAVING count(*) > 1) SELECT a.name FROM author a JOIN prolific p ON p.author_id = a.id ORDER BY a.name;
WITH r AS (SELECT book_id, max(stars) AS best FROM review GROUP BY book_id), b AS (SELECT id, title FROM book) SELECT b.title, r.best FROM b JOIN r ON r.book_id = b.id ORDER BY r.best DESC, b.title;
-- set operations
SELECT country FROM author UNION SELECT 'SE' ORDER BY 1;
SELECT author_id FROM book UNION ALL SELECT id FROM author ORDER BY 1 NULLS FIRST;
SELECT id FROM author INTERSECT SELECT author_id FROM book ORDER BY 1;
SELECT id FROM author EXCEPT SELECT author_id FROM book ORDER BY 1;
-- window functions
SELECT title, year, row_number() OVER (ORDER BY year) FROM book ORDER BY year;
SELECT author_id, title, rank() OVER (PARTITION BY author_id ORDER BY pages DESC) AS r FROM book WHERE author_id IS NOT NULL ORDER BY author_id, r;
SELECT id, stars, sum(stars) OVER (ORDER BY id) AS running FROM review ORDER BY id;
SELECT book_id, stars, lag(stars) OVER (PARTITION BY book_id ORDER BY id) FROM review ORDER BY id;
-- ORDER BY with NULLS, LIMIT and OFFSET
SELECT b.title, b.pages FROM book b LEFT JOIN author a ON a.id = b.author_id ORDER BY b.pages;
SELECT b.title, b.pages FROM book b LEFT JOIN author a ON a.id = b.author_id ORDER BY b.pages DESC;
SELECT b.title, b.pages FROM book b LEFT JOIN author a ON a.id = b.author_id ORDER BY b.pages NULLS FIRST LIMIT 3;
SELECT b.title, a.country FROM book b LEFT JOIN author a ON a.id = b.author_id ORDER BY a.country DESC NULLS LAST, b.title LIMIT 2 OFFSET 1;
SELECT DISTINCT country FROM author ORDER BY country LIMIT 2 OFFSET 1;
-- expressions and types through the engine
SELECT b.id, b.pages / 100, b.pages % 7, b.year - 1900, -b.pages / 2 FROM book b JOIN author a ON a.id = b.author_id ORDER BY b.id;
SELECT upper(a.name) || '!' AS shout, length(b.title), coalesce(a.country, '??') FROM author a JOIN book b ON b.author_id = a.id ORDER BY b.id LIMIT 3;
SELECT a.name, CASE WHEN count(b.id) > 1 THEN 'many' ELSE 'few' END FROM author a LEFT JOIN book b ON b.author_id = a.id GROUP BY a.name ORDER BY 1;
SELECT x FROM (VALUES (1), (2), (NULL)) v(x) ORDER BY x;
SELECT a.id, b.id FROM author a JOIN book b ON b.author_id = a.id WHERE a.id = 2 ORDER BY b.id;
SELECT a.id FROM author a WHERE a.id IN (1, 3) AND EXISTS (SELECT 1 FROM book WHERE author_id = a.id) ORDER BY 1;
-- errors
SELECT zzz_unknown FROM author a JOIN book b ON b.author_id = a.id;
SELECT a.zzz_unknown FROM author a JOIN book b ON b.author_id = a.id;
SELECT id FROM author a JOIN book b ON b.author_id = a.id;
SELECT name, count(*) FROM author GROUP BY country;
SELECT b.pages / 0 FROM book b JOIN author a ON a.id = b.author_id;
SELECT (SELECT id FROM book) FROM author;
SELECT nosuchfunction() FROM author a JOIN book b ON b.author_id = a.id;
SELECT * FROM author a JOIN missing m ON m.id = a.id;
-- correlated scalar subqueries that are plain lookups (not aggregated)
SELECT a.name, (SELECT b.title FROM book b WHERE b.author_id = a.id AND b.year > 2000) FROM author a ORDER BY a.id;
SELECT b.title, (SELECT a.name FROM author a WHERE a.id = b.author_id AND b.year < 1970) AS early FROM book b ORDER BY b.id;
SELECT a.name, (SELECT b.title FROM book b WHERE b.author_id = a.id) FROM author a ORDER BY a.id;
SELECT a.name, EXISTS (SELECT 1 FROM book b WHERE b.author_id = a.id) AS has_books, NOT EXISTS (SELECT 1 FROM review r JOIN book b ON b.id = r.book_id WHERE b.author_id = a.id) AS unreviewed FROM author a ORDER BY a.id;
-- A fractional number cast to an integer rounds: numeric halves away from
-- zero, floats to the even neighbour (Arrow's cast alone truncates).
SELECT title, price::int AS whole, (price * 2)::smallint AS twice, (-price)::bigint AS negated FROM book WHERE price IS NOT NULL ORDER BY id;
SELECT v::int AS i, v::float8::int AS f, v::real::bigint AS r FROM (VALUES (0.5), (1.5), (2.5), (-2.5), (-0.5), (2.4999), (7)) AS t(v) ORDER BY v;
SELECT sum(price)::int, avg(pages)::int, round(avg(pages), 2)::bigint FROM book;
SELECT count(*) FROM book WHERE price::int = 13;
SELECT (2.5::float8 * 1)::int AS even_down, (3.5::float8 * 1)::int AS even_up;
-- PostgreSQL has no operator between text and a number: 42883 at the
-- operator, on the single-table path and in the query engine alike.
SELECT title FROM book WHERE title = 5;
SELECT count(*) FROM book WHERE title = 5;
SELECT b.title FROM book b JOIN author a ON a.name = b.id;
SELECT count(*) FROM book WHERE title IN (5, 6);
SELECT title FROM book WHERE title IN (1, 2);
SELECT count(*) FROM book WHERE year <> title;
SELECT count(*) FROM author WHERE country != 1;
SELECT count(*) FROM book WHERE id = '10';
SELECT count(*) FROM book b JOIN author a ON a.id = b.author_id WHERE a.name > 1.5;
DROP TABLE review;
DROP TABLE book;
DROP TABLE author;
-- Grouping by a table's primary key determines its other columns, as
-- Django's annotate() relies on; a unique key does not, as in PostgreSQL.
CREATE TABLE fd_author (id int PRIMARY KEY, name text, email text UNIQUE);
CREATE TABLE fd_book (id int PRIMARY KEY, author_id int, pages int);
INSERT INTO fd_author VALUES (1, 'Ann', 'a@x'), (2, 'Bob', 'b@x'), (3, 'Cy', NULL);
INSERT INTO fd_book VALUES (10, 1, 100), (11, 1, 50), (12, 2, 10);
SELECT "fd_author"."name", COUNT(DISTINCT "fd_book"."id") AS n, SUM("fd_book"."pages") AS p FROM "fd_author" LEFT OUTER JOIN "fd_book" ON ("fd_author"."id" = "fd_book"."author_id") GROUP BY "fd_author"."id" ORDER BY "fd_author"."name";
SELECT a.name, a.email, count(*) FROM fd_author a JOIN fd_book b ON b.author_id = a.id GROUP BY a.id ORDER BY 1;
SELECT a.name, count(*) FROM fd_author a GROUP BY a.email ORDER BY 1;
SELECT b.pages, count(*) FROM fd_author a JOIN fd_book b ON b.author_id = a.id GROUP BY a.id ORDER BY 1;
DROP TABLE fd_book;
DROP TABLE fd_author;
-- Casts to uuid, json and jsonb, which DataFusion has no types for:
-- SQLAlchemy's bulk insert sends SELECT p0::UUID, p2::JSONB FROM (VALUES ...).
SELECT 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid AS u, '{"b":1,  "a":[1,2]}'::jsonb AS j, '{"b":1,  "a":[1,2]}'::json AS js;
SELECT x::uuid FROM (VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), (NULL)) AS t(x);
CREATE TABLE cast_events (id serial PRIMARY KEY, key uuid UNIQUE, payload jsonb, kind varchar(10));
INSERT INTO cast_events (key, kind, payload) SELECT p0::UUID, p1::VARCHAR, p2::JSONB FROM (VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID, 'x', '{"k": 1}'::JSONB, 0), ('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID, 'y', '[1]'::JSONB, 1)) AS imp_sen(p0, p1, p2, sen_counter) ORDER BY sen_counter RETURNING cast_events.id, cast_events.key, cast_events.payload;
SELECT key, payload FROM cast_events ORDER BY id;
DROP TABLE cast_events;
