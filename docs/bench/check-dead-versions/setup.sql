CREATE EXTENSION archive_cluster;
CREATE TABLE t (ts timestamp NOT NULL, id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, cid int NOT NULL, pad varchar(200));
CREATE INDEX ON t (cid, ts);
INSERT INTO t (ts, cid, pad) SELECT now() - interval '3 hours' + i * interval '10 ms', (random() * 9999)::int + 1, repeat('x', (random() * 200)::int) FROM generate_series(1, 1000000) i;
SELECT archive_cluster_register('t', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 second');
SELECT * FROM archive_cluster_run('t', force => true);
VACUUM ANALYZE t_archive; VACUUM ANALYZE t_current;
