-- The seed's table t(ts, id, cid, pad) filled with :rows rows by one INSERT
-- ... SELECT (bench/oltp_protocols.sh, bench/preload_cost.sh): ids 1..rows
-- in ts order, one row every 100 hours / rows up to now (the last hour holds
-- ~1% of the rows); 10,000 customers and pads of 0-200 characters
-- interleaved as the seed's inserts leave them, the same rows every time
-- (setseed); primary key (id), index (cid, ts), the sequence at rows.
--   psql -v rows=N -f seed_table.sql
SET synchronous_commit = off;
SET maintenance_work_mem = '512MB';
CREATE SEQUENCE t_id_seq;
CREATE TABLE t (
	ts timestamp NOT NULL,
	id int NOT NULL,
	cid int NOT NULL,
	pad varchar(200) NOT NULL
);
SELECT setseed(0.5);
INSERT INTO t (ts, id, cid, pad)
SELECT localtimestamp - (:rows - g) * (interval '100 hours' / :rows), g,
	   floor(random() * 10000)::int, repeat('*', floor(random() * 201)::int)
FROM generate_series(1, :rows) g;
ALTER TABLE t ADD PRIMARY KEY (id);
CREATE INDEX t_cid_ts ON t (cid, ts);
SELECT setval('t_id_seq', :rows);
