CREATE TABLE events (id integer PRIMARY KEY, kind text NOT NULL, at date);
INSERT INTO events VALUES (1, 'a', '2024-01-01'), (2, 'b', NULL), (3, 'c', NULL);
UPDATE events SET id = 10 WHERE id = 2;
UPDATE events SET id = 3 WHERE id = 10;
UPDATE events SET id = id + 100 WHERE kind = 'a' RETURNING id, kind;
SELECT * FROM events ORDER BY id;
INSERT INTO events VALUES (1, 'again', NULL);
SELECT * FROM events ORDER BY id;
DROP TABLE events;
