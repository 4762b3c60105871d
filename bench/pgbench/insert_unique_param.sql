\set id random(1, 4000000000000)
INSERT INTO bench_users (id, email, name) VALUES (:id, 'user' || :id::text || '@example.com', 'bench');
