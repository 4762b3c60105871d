CREATE TABLE typed (id uuid PRIMARY KEY, b boolean, s smallint, i integer, big bigint, r real, d double precision, n numeric, t text, c char(3), v varchar(5), dt date, ts timestamp, tz timestamptz, j jsonb, raw bytea);
INSERT INTO typed VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', true, 1, 2, 3, 1.5, 2.25, 10.50, 'text', 'ab', 'abc', '2024-02-29', '2024-01-02 03:04:05.5', '2024-01-02 03:04:05+02', '{"b": 1, "a": [1, 2]}', '\x0102');
SELECT * FROM typed;
SELECT id FROM typed WHERE n = 10.5;
SELECT c, v FROM typed WHERE c = 'ab';
INSERT INTO typed (id, n) VALUES ('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 1);
INSERT INTO typed (id, dt) VALUES ('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-02-30');
SELECT 1, 'x', 1.5, true, NULL;
SELECT 1::int AS one, 'a' || 'b' AS ab, 7 / 2, lower('ABC'), coalesce(NULL, 3);
-- length of bytea counts bytes; octet_length counts bytes of text too.
SELECT length('\x010203'::bytea), octet_length('\x010203'::bytea), octet_length('héllo'), length('héllo'), char_length('héllo');
DROP TABLE typed;
