CREATE TABLE acct (id integer PRIMARY KEY, email text UNIQUE, bal integer NOT NULL);
INSERT INTO acct VALUES (1, 'a@x', 100), (2, 'b@x', 100);
-- ROLLBACK undoes every write of the block.
BEGIN;
INSERT INTO acct VALUES (3, 'c@x', 1);
UPDATE acct SET bal = bal - 30 WHERE id = 1;
DELETE FROM acct WHERE id = 2;
SELECT id, email, bal FROM acct ORDER BY id;
SELECT bal FROM acct WHERE email = 'a@x';
ROLLBACK;
SELECT id, email, bal FROM acct ORDER BY id;
-- An error fails the block; COMMIT then rolls back.
BEGIN;
INSERT INTO acct VALUES (3, 'c@x', 1);
INSERT INTO acct VALUES (4, 'a@x', 1);
SELECT 1;
COMMIT;
SELECT id FROM acct ORDER BY id;
-- Savepoints undo exactly what followed them.
BEGIN;
INSERT INTO acct VALUES (3, 'c@x', 3);
SAVEPOINT s1;
INSERT INTO acct VALUES (4, 'd@x', 4);
UPDATE acct SET bal = 33 WHERE id = 3;
ROLLBACK TO SAVEPOINT s1;
SELECT id, bal FROM acct ORDER BY id;
SAVEPOINT s2;
INSERT INTO acct VALUES (5, 'e@x', 5), (6, 'c@x', 6);
SELECT 1;
ROLLBACK TO s2;
INSERT INTO acct VALUES (5, 'e@x', 5);
RELEASE SAVEPOINT s2;
ROLLBACK TO s2;
COMMIT;
SELECT id, email, bal FROM acct ORDER BY id;
-- Keys freed by a rolled-back block are free; its own duplicate is caught.
BEGIN;
INSERT INTO acct VALUES (7, 'g@x', 7);
INSERT INTO acct VALUES (8, 'g@x', 8);
ROLLBACK;
INSERT INTO acct VALUES (7, 'd@x', 7) RETURNING id, email;
-- Upserts and RETURNING inside a block.
BEGIN;
INSERT INTO acct VALUES (1, 'a@x', 0) ON CONFLICT (id) DO UPDATE SET bal = acct.bal + 1 RETURNING id, bal;
INSERT INTO acct VALUES (9, 'b@x', 0) ON CONFLICT DO NOTHING RETURNING id;
UPDATE acct SET bal = bal * 2 WHERE id IN (1, 3) RETURNING id, bal;
DELETE FROM acct WHERE bal > 1000 RETURNING id;
COMMIT;
SELECT id, bal FROM acct ORDER BY id;
-- Read-only blocks and isolation levels.
BEGIN READ ONLY;
SELECT count(*) FROM acct;
DELETE FROM acct;
ROLLBACK;
BEGIN ISOLATION LEVEL READ COMMITTED;
SHOW transaction_isolation;
COMMIT;
START TRANSACTION;
UPDATE acct SET bal = 0 WHERE id = 1;
COMMIT AND CHAIN;
UPDATE acct SET bal = 1 WHERE id = 1;
ROLLBACK;
SELECT id, bal FROM acct WHERE id = 1;
ROLLBACK;
COMMIT;
