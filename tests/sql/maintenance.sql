-- VACUUM and ANALYZE: accepted, with nothing to do (pgbench -i runs
-- VACUUM ANALYZE after loading); the tables they name must exist.
CREATE TABLE vt (id int PRIMARY KEY, v text) WITH (fillfactor = 100);
INSERT INTO vt VALUES (1, 'a');
VACUUM;
VACUUM vt;
VACUUM ANALYZE vt;
vacuum (verbose false, analyze) public.vt (v);
VACUUM FULL FREEZE vt;
ANALYZE;
ANALYZE vt;
analyse vt (id, v);
VACUUM nope;
ANALYZE vt, nope;
BEGIN;
ANALYZE vt;
VACUUM vt;
ROLLBACK;
BEGIN;
VACUUM;
COMMIT;
SELECT * FROM vt;
DROP TABLE vt;
