-- Layout "sql": the seed's design written in plain SQL and PL/pgSQL: the view
-- t over t_current and t_archive, PL/pgSQL INSTEAD OF triggers, and a run
-- (WITH m AS (DELETE ... RETURNING *) INSERT INTO t_archive SELECT * FROM m
-- ORDER BY cid, ts) as soon as 550,000 rows of t_current are older than the
-- hot window (the seed's cadence), checked every bench.check_every rows: the
-- same rule and checks as archive_cluster gets in layout_ext.sql.
CREATE SEQUENCE t_id_seq;
CREATE TABLE t_current (
	ts timestamp NOT NULL,
	id int NOT NULL PRIMARY KEY,
	cid int NOT NULL,
	pad varchar(200) NOT NULL
);
CREATE INDEX t_current_cid_ts ON t_current (cid, ts);
CREATE TABLE t_archive (LIKE t_current INCLUDING ALL);
CREATE VIEW t AS SELECT * FROM t_current UNION ALL SELECT * FROM t_archive;

CREATE FUNCTION t_dml() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO t_current VALUES (NEW.*);
		RETURN NEW;
	ELSIF TG_OP = 'UPDATE' THEN
		UPDATE t_current SET ts = NEW.ts, id = NEW.id, cid = NEW.cid, pad = NEW.pad WHERE id = OLD.id;
		IF NOT FOUND THEN
			UPDATE t_archive SET ts = NEW.ts, id = NEW.id, cid = NEW.cid, pad = NEW.pad WHERE id = OLD.id;
		END IF;
		RETURN NEW;
	ELSE
		DELETE FROM t_current WHERE id = OLD.id;
		IF NOT FOUND THEN
			DELETE FROM t_archive WHERE id = OLD.id;
		END IF;
		RETURN OLD;
	END IF;
END $$;
CREATE TRIGGER t_dml INSTEAD OF INSERT OR UPDATE OR DELETE ON t
	FOR EACH ROW EXECUTE FUNCTION t_dml();

-- One run: the rows older than the hot window, moved sorted, in one
-- statement and transaction; sorted in memory (work_mem as large as the
-- maintenance_work_mem archive_cluster's sort gets).
CREATE FUNCTION sql_archive_run(hot interval) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	PERFORM set_config('work_mem', current_setting('maintenance_work_mem'), true);
	WITH m AS (DELETE FROM t_current WHERE ts < now() - hot RETURNING *)
	INSERT INTO t_archive SELECT * FROM m ORDER BY cid, ts;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;

CREATE TABLE bench_state (last_check_ids bigint NOT NULL);
INSERT INTO bench_state VALUES (0);

CREATE PROCEDURE bench_maybe_run(total bigint) LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	n bigint;
	hot interval := current_setting('bench.hot_window')::interval;
BEGIN
	IF total - (SELECT last_check_ids FROM bench_state) >= current_setting('bench.check_every')::bigint THEN
		UPDATE bench_state SET last_check_ids = total;
		IF (SELECT count(*) FROM t_current WHERE ts < now() - hot) >= current_setting('bench.run_every')::bigint THEN
			t0 := clock_timestamp();
			n := sql_archive_run(hot);
			INSERT INTO bench_runs (table_rows, rows_moved, seconds, how)
			VALUES (total, n, extract(epoch FROM clock_timestamp() - t0), 'sql');
		END IF;
	END IF;
END $$;
