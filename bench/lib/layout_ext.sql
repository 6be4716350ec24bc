-- Layout "ext": archive_cluster.  The seed's table, registered; runs are
-- archive_cluster_run('t') called by the growth every bench.check_every
-- rows (as the background worker would check every naptime): a run moves
-- rows only when the table is due (its automatic threshold, distinct keys x
-- rows per page, ~550,000 rows here).
CREATE EXTENSION IF NOT EXISTS archive_cluster;
CREATE SEQUENCE t_id_seq;
CREATE TABLE t (
	ts timestamp NOT NULL,
	id int NOT NULL PRIMARY KEY,
	cid int NOT NULL,
	pad varchar(200) NOT NULL
);
CREATE INDEX t_cid_ts ON t (cid, ts);
SELECT archive_cluster_register('t', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => current_setting('bench.hot_window')::interval,
								batch_rows => nullif(current_setting('bench.batch_rows', true), '')::bigint);

CREATE TABLE bench_state (last_check_ids bigint NOT NULL);
-- compactions made while growing
CREATE TABLE bench_compactions (
	compaction_no serial PRIMARY KEY,
	table_rows bigint NOT NULL,
	rows_rewritten bigint NOT NULL,
	bytes_rewritten bigint NOT NULL,
	seconds float8 NOT NULL,
	finished_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
INSERT INTO bench_state VALUES (0);

CREATE PROCEDURE bench_maybe_run(total bigint) LANGUAGE plpgsql AS $$
DECLARE
	r record;
	c record;
BEGIN
	IF total - (SELECT last_check_ids FROM bench_state) >= current_setting('bench.check_every')::bigint THEN
		UPDATE bench_state SET last_check_ids = total;
		-- no statistics yet (threshold 'default'): analyze, as after a load
		IF (SELECT threshold_source FROM archive_cluster_tables WHERE relation = 't'::regclass) = 'default' THEN
			ANALYZE t_current;
		END IF;
		SELECT * INTO r FROM archive_cluster_run('t');
		IF r.status = 'archived' THEN
			INSERT INTO bench_runs (table_rows, rows_moved, seconds, how)
			VALUES (total, r.rows_moved, extract(epoch FROM r.duration), 'archive_cluster');
			-- then, as the worker does, a compaction if due, in a transaction of
			-- its own (bench.sh vacuums the archive after it)
			IF current_setting('bench.compaction', true) IS DISTINCT FROM 'off' THEN
				COMMIT;
				SELECT * INTO c FROM archive_cluster_compact('t');
				IF c.status = 'compacted' THEN
					INSERT INTO bench_compactions (table_rows, rows_rewritten, bytes_rewritten, seconds)
					VALUES (total, c.rows_rewritten, c.bytes_rewritten, extract(epoch FROM c.duration));
				END IF;
			END IF;
		END IF;
	END IF;
END $$;
