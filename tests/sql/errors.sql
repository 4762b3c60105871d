CREATE TABLE items (id integer PRIMARY KEY, code varchar(3) NOT NULL, qty smallint, price numeric, created text DEFAULT 'now');
CREATE TABLE items (id integer PRIMARY KEY);
CREATE TABLE IF NOT EXISTS items (id integer PRIMARY KEY);
INSERT INTO items (id, code) VALUES (1, 'abcd');
INSERT INTO items (id, code) VALUES (1, NULL);
INSERT INTO items (id, code, qty) VALUES (1, 'abc', 40000);
SELEC 1;
INSERT INTO items (id, code) VALUES ('x', 'abc');
INSERT INTO items (id, code, nope) VALUES (1, 'abc', 1);
INSERT INTO missing VALUES (1);
SELECT * FROM items WHERE id = 1 AND
  qty = 'many';
SELECT * FROM items WHERE
;
INSERT INTO items (id, code, qty, price) VALUES (1, 'ab ', 7, 1.50) RETURNING id, code, qty, price;
INSERT INTO items (id, code) VALUES (NULL, 'x');
UPDATE items SET code = 'toolong' WHERE id = 1;
UPDATE items SET qty = qty + 1 WHERE id = 1 RETURNING qty;
SELECT id, code, qty, price FROM items WHERE price = 1.5;
DROP TABLE items;
