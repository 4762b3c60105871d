CREATE TABLE cust (id integer PRIMARY KEY, name text);
CREATE TABLE ord (id integer PRIMARY KEY, customer_id integer, number integer);
INSERT INTO cust VALUES (1, 'Ann'), (2, 'Bob'), (3, 'Cyd');
INSERT INTO ord VALUES (1, 1, 1), (2, 1, 2), (3, 2, 1), (4, 2, NULL);
SELECT c.name, EXISTS(SELECT 1 AS a FROM ord u0 WHERE u0.customer_id = (c.id) LIMIT 1) AS has_orders, (SELECT u0.number FROM ord u0 WHERE u0.customer_id = (c.id) ORDER BY u0.number DESC LIMIT 1) AS last_number FROM cust c ORDER BY c.name;
SELECT c.name, (SELECT u0.number AS n FROM ord u0 WHERE u0.customer_id = c.id ORDER BY n LIMIT 1) AS first_number, (SELECT u0.number FROM ord u0 WHERE u0.customer_id = c.id ORDER BY 1 DESC NULLS LAST LIMIT 1) AS last_nn FROM cust c ORDER BY c.name;
SELECT c.name FROM cust c WHERE EXISTS (SELECT 1 FROM ord o WHERE o.customer_id = c.id LIMIT 1) ORDER BY 1;
SELECT c.name, NOT EXISTS (SELECT 1 FROM ord o WHERE o.customer_id = c.id LIMIT 5) FROM cust c ORDER BY 1;
SELECT c.name, (SELECT o.number * 10 + c.id FROM ord o WHERE o.customer_id = c.id AND o.number = 1) AS tagged, (SELECT o.number FROM ord o WHERE o.customer_id = c.id AND c.name <> 'Bob' AND o.number = 2) AS second FROM cust c ORDER BY c.name;
SELECT c.name, (SELECT o.number + c.id FROM ord o WHERE o.customer_id = c.id) FROM cust c ORDER BY c.name;
DROP TABLE ord;
DROP TABLE cust;
-- A correlated subquery with a WITH of its own (lifted, computed once for every starting row).
CREATE TABLE emp (id integer PRIMARY KEY, boss integer, name text);
INSERT INTO emp VALUES (1, NULL, 'Ann'), (2, 1, 'Bob'), (3, 2, 'Cyd'), (4, 2, 'Dan'), (5, NULL, 'Eve');
SELECT e.name, (WITH RECURSIVE up(id, boss, depth) AS (SELECT x.id, x.boss, 0 FROM emp x WHERE x.id = e.id UNION ALL SELECT m.id, m.boss, up.depth + 1 FROM emp m, up WHERE m.id = up.boss) SELECT id FROM up ORDER BY depth DESC LIMIT 1) AS top, (WITH RECURSIVE up AS (SELECT x.boss, 1 AS depth FROM emp x WHERE e.id = x.id AND x.boss IS NOT NULL UNION ALL SELECT m.boss, up.depth + 1 FROM emp m JOIN up ON m.id = up.boss WHERE m.boss IS NOT NULL) SELECT max(depth) FROM up) AS levels FROM emp e ORDER BY e.id;
SELECT e.name, (WITH r AS (SELECT x.name FROM emp x WHERE x.boss = e.id) SELECT count(*) FROM r) AS reports, (WITH r AS (SELECT x.name FROM emp x WHERE x.boss = e.id) SELECT string_agg(r.name, ',' ORDER BY r.name) FROM r) AS names FROM emp e ORDER BY e.id;
DROP TABLE emp;
