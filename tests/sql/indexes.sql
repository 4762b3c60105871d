-- Plain (non-unique) indexes, as migrations create them: recorded, found
-- by DROP INDEX, clashing with other relations' names; results never
-- depend on them.
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
