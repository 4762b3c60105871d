\set id random(1, 10000)
INSERT INTO bench_users (id, email, name) VALUES (:id, 'seed:id@example.com', 'seed') ON CONFLICT DO NOTHING;
