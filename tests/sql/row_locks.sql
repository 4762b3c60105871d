CREATE TABLE jobs (id integer PRIMARY KEY, queue text NOT NULL, state text NOT NULL, run_at integer, payload text UNIQUE);
INSERT INTO jobs VALUES (1, 'mail', 'ready', 30, 'p1'), (2, 'mail', 'ready', 10, 'p2'), (3, 'mail', 'done', 20, 'p3'), (4, 'sms', 'ready', 10, 'p4'), (5, 'mail', 'ready', NULL, 'p5');
-- Outside a block: results and tags are those of the SELECT.
SELECT * FROM jobs WHERE id = 1 FOR UPDATE;
SELECT id, state FROM jobs WHERE payload = 'p2' FOR NO KEY UPDATE;
SELECT id FROM jobs WHERE id IN (3, 1, 9) FOR SHARE;
SELECT id, run_at FROM jobs WHERE state = 'ready' ORDER BY run_at NULLS FIRST, id FOR KEY SHARE;
SELECT id FROM jobs WHERE id = 99 FOR UPDATE;
SELECT id FROM jobs WHERE queue = 'mail' AND state = 'ready' ORDER BY run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED;
SELECT id FROM jobs ORDER BY id DESC FOR UPDATE NOWAIT LIMIT 2 OFFSET 1;
SELECT id FROM jobs ORDER BY id LIMIT 0 FOR UPDATE;
SELECT j.id, j.state AS s FROM jobs AS j WHERE j.id < 3 ORDER BY 1 FOR UPDATE OF j;
SELECT id FROM jobs WHERE id = 2 FOR SHARE OF jobs SKIP LOCKED FOR UPDATE NOWAIT;
-- A job queue's turn: lock the next job, mark it, commit.
BEGIN;
SELECT id, payload FROM jobs WHERE queue = 'mail' AND state = 'ready' ORDER BY run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED;
UPDATE jobs SET state = 'running' WHERE id = 2 RETURNING id, state;
SELECT id, state FROM jobs WHERE id = 2 FOR UPDATE;
COMMIT;
SELECT id, state FROM jobs ORDER BY id;
-- Locks and savepoints; a block that only locked.
BEGIN;
SELECT id FROM jobs WHERE state = 'ready' ORDER BY id FOR UPDATE;
SAVEPOINT s;
SELECT id FROM jobs WHERE id = 3 FOR NO KEY UPDATE;
ROLLBACK TO s;
SELECT count(*) FROM jobs;
COMMIT;
BEGIN;
SELECT * FROM jobs WHERE id = 4 FOR KEY SHARE NOWAIT;
ROLLBACK;
-- What PostgreSQL refuses.
SELECT count(*) FROM jobs FOR UPDATE;
SELECT count(*) FROM jobs FOR NO KEY UPDATE OF jobs;
SELECT * FROM jobs WHERE id = 1 FOR UPDATE OF x;
SELECT * FROM jobs j WHERE id = 1 FOR SHARE OF jobs;
SELECT * FROM jobs WHERE id = 1 FOR KEY SHARE OF public.jobs;
SELECT DISTINCT state FROM jobs FOR UPDATE;
SELECT state FROM jobs GROUP BY state FOR SHARE;
SELECT id FROM jobs UNION SELECT id FROM jobs FOR KEY SHARE;
SELECT * FROM missing FOR UPDATE;
SELECT nope FROM jobs FOR UPDATE;
-- An error in a block fails it, as any error does.
BEGIN;
SELECT id FROM jobs WHERE id = 1 FOR UPDATE;
SELECT count(*) FROM jobs FOR UPDATE;
SELECT 1;
COMMIT;
-- A READ ONLY block refuses every strength, even with nothing to lock.
BEGIN READ ONLY;
SELECT id FROM jobs WHERE id = 99 FOR UPDATE;
ROLLBACK;
BEGIN READ ONLY;
SELECT id FROM jobs FOR NO KEY UPDATE SKIP LOCKED;
ROLLBACK;
BEGIN READ ONLY;
SELECT id FROM jobs FOR SHARE;
ROLLBACK;
BEGIN READ ONLY;
SELECT id FROM jobs FOR KEY SHARE NOWAIT;
ROLLBACK;
START TRANSACTION READ ONLY;
SELECT id FROM jobs WHERE id = 1;
COMMIT;
SELECT id, state FROM jobs ORDER BY id;
