-- DDL inside a block is transactional: it is undone by ROLLBACK, by an
-- error, and by ROLLBACK TO, together with the block's rows.
CREATE TABLE keep (id integer PRIMARY KEY, email text UNIQUE);
INSERT INTO keep VALUES (1, 'a@x');
-- A migration that fails half way leaves nothing behind, and the table it
-- was building never accepts a duplicate afterwards.
BEGIN;
CREATE TABLE users (id integer PRIMARY KEY, email text NOT NULL);
INSERT INTO users VALUES (1, 'ann@x'), (2, 'bob@x');
CREATE UNIQUE INDEX users_email_idx ON users (email);
INSERT INTO users VALUES (3, 'ann@x');
CREATE TABLE after_the_error (id integer PRIMARY KEY);
COMMIT;
SELECT * FROM users;
BEGIN;
CREATE TABLE users (id integer PRIMARY KEY, email text NOT NULL);
CREATE UNIQUE INDEX users_email_idx ON users (email);
INSERT INTO users VALUES (1, 'ann@x');
COMMIT;
INSERT INTO users VALUES (2, 'ann@x');
SELECT id, email FROM users ORDER BY id;
-- ROLLBACK undoes a CREATE, a DROP and a DROP INDEX.
BEGIN;
CREATE TABLE scratch (id integer PRIMARY KEY);
INSERT INTO scratch VALUES (1);
DROP TABLE keep;
SELECT * FROM keep;
ROLLBACK;
SELECT * FROM scratch;
SELECT id, email FROM keep ORDER BY id;
INSERT INTO keep VALUES (2, 'a@x');
BEGIN;
DROP INDEX users_email_idx;
INSERT INTO users VALUES (2, 'ann@x');
ROLLBACK;
INSERT INTO users VALUES (2, 'ann@x');
-- A committed DROP and CREATE of one name replaces the table.
BEGIN;
DROP TABLE keep;
CREATE TABLE keep (id integer PRIMARY KEY, note text);
INSERT INTO keep VALUES (7, 'new');
COMMIT;
SELECT * FROM keep;
-- ROLLBACK TO a savepoint undoes exactly the DDL after it.
BEGIN;
CREATE TABLE a (id integer PRIMARY KEY);
INSERT INTO a VALUES (1);
SAVEPOINT s;
CREATE TABLE b (id integer PRIMARY KEY);
DROP TABLE a;
SELECT * FROM a;
ROLLBACK TO SAVEPOINT s;
SELECT * FROM a;
SELECT * FROM b;
ROLLBACK TO SAVEPOINT s;
CREATE TABLE b (id integer PRIMARY KEY, v text UNIQUE);
COMMIT;
SELECT * FROM a;
SELECT * FROM b;
-- A failed DDL statement fails the block like any other.
BEGIN;
CREATE TABLE a (id integer PRIMARY KEY);
SELECT 1;
ROLLBACK;
BEGIN;
CREATE TABLE IF NOT EXISTS a (id integer PRIMARY KEY);
DROP TABLE IF EXISTS nothing_here;
DROP TABLE a, b;
COMMIT;
SELECT * FROM a;
DROP TABLE keep, users;
