-- Advisory locks in one session: return values, re-entrancy, WARNINGs,
-- the two key spaces, transaction-level locks, and bad arguments.
SELECT pg_advisory_lock(42);
SELECT pg_advisory_lock(42);
SELECT pg_try_advisory_lock(42);
SELECT pg_advisory_unlock(42);
SELECT pg_advisory_unlock(42);
SELECT pg_advisory_unlock(42);
SELECT pg_advisory_unlock(42);
-- (int, int) is a key space of its own.
SELECT pg_try_advisory_lock(1, 2);
SELECT pg_advisory_unlock(1, 2);
SELECT pg_advisory_unlock(1, 2);
SELECT pg_advisory_lock(0, 7);
SELECT pg_advisory_unlock(7);
SELECT pg_advisory_unlock(0, 7);
-- Shared and exclusive are counted apart.
SELECT pg_advisory_lock_shared(5);
SELECT pg_try_advisory_lock_shared(5);
SELECT pg_advisory_unlock(5);
SELECT pg_advisory_unlock_shared(5);
SELECT pg_advisory_unlock_shared(5);
SELECT pg_advisory_unlock_shared(5);
SELECT pg_try_advisory_lock(5) AS mine, pg_advisory_lock_shared(5) AS also;
SELECT pg_advisory_unlock_all();
SELECT pg_advisory_unlock(5);
SELECT pg_advisory_unlock_shared(5);
-- Transaction-level locks end with the transaction; unlock does not
-- release them.
SELECT pg_advisory_xact_lock(9);
SELECT pg_advisory_unlock(9);
BEGIN;
SELECT pg_advisory_xact_lock(9);
SELECT pg_try_advisory_xact_lock(9);
SELECT pg_try_advisory_xact_lock_shared(9, 9);
SELECT pg_advisory_xact_lock_shared(9, 9);
SELECT pg_advisory_unlock(9);
SELECT pg_advisory_unlock_all();
COMMIT;
SELECT pg_advisory_unlock(9);
BEGIN;
SELECT pg_advisory_xact_lock(10);
ROLLBACK;
-- Session locks outlive their transaction, committed or not.
BEGIN;
SELECT pg_advisory_lock(11);
ROLLBACK;
SELECT pg_advisory_unlock(11);
-- ROLLBACK TO gives back transaction-level locks taken since the
-- savepoint; DISCARD ALL releases session-level locks.
BEGIN;
SAVEPOINT s;
SELECT pg_advisory_xact_lock(14);
SELECT pg_advisory_lock(15);
ROLLBACK TO s;
COMMIT;
SELECT pg_advisory_lock(16);
DISCARD ALL;
SELECT pg_advisory_unlock(15);
SELECT pg_advisory_unlock(15);
SELECT pg_advisory_unlock(16);
-- STRICT: NULL in, NULL out, no lock.
SELECT pg_advisory_lock(NULL);
SELECT pg_try_advisory_lock(NULL, 1);
SELECT pg_advisory_unlock(NULL);
-- Arguments as PostgreSQL resolves them.
SELECT pg_advisory_lock('12');
SELECT pg_advisory_unlock(12::bigint);
SELECT pg_advisory_lock(9223372036854775807);
SELECT pg_advisory_unlock(9223372036854775807);
SELECT pg_try_advisory_lock(-1, -2);
SELECT pg_advisory_unlock(-1, -2);
SELECT pg_advisory_lock('x');
SELECT pg_advisory_lock(1.5);
SELECT pg_advisory_lock(true);
SELECT pg_advisory_lock(1, 2, 3);
SELECT pg_advisory_lock();
SELECT pg_advisory_lock(3000000000, 1);
SELECT pg_advisory_unlock_all(1);
SELECT pg_try_advisory_lock('a', 'b', 'c');
-- After an error in a block, ROLLBACK still ends its locks.
BEGIN;
SELECT pg_advisory_xact_lock(13);
SELECT pg_advisory_lock(1.5);
SELECT pg_advisory_xact_lock(13);
ROLLBACK;
SELECT pg_try_advisory_lock(13);
SELECT pg_advisory_unlock_all();
-- pg_locks lists advisory locks as PostgreSQL does: a bigint key split in
-- classid and objid (objsubid 1), an (int, int) key as both (objsubid 2).
SELECT pg_advisory_lock(42), pg_advisory_lock_shared(1, 2), pg_advisory_lock(-5000000000), pg_advisory_lock(42);
SELECT locktype, classid, objid, objsubid, mode, granted, fastpath FROM pg_locks WHERE locktype = 'advisory' ORDER BY objsubid, objid;
BEGIN;
SELECT pg_advisory_xact_lock_shared(7);
SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock';
COMMIT;
SELECT pg_advisory_unlock_all();
SELECT count(*) FROM pg_locks WHERE locktype = 'advisory';
