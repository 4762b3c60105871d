-- A transaction that takes one advisory lock every client contends for,
-- held until COMMIT: sessions take turns on it.
BEGIN;
SELECT pg_advisory_xact_lock(42);
SELECT 1;
END;
