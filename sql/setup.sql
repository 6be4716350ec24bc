-- Shared set-up for the regression suite.
CREATE EXTENSION archive_cluster;
SELECT extversion FROM pg_extension WHERE extname = 'archive_cluster';

-- Runs a statement; returns 'ok' or SQLSTATE, message and hint of its error.
CREATE FUNCTION try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	st text;
	msg text;
	hint text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
	RETURN st || ': ' || msg || CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END;
END $$;

-- Rows, heap pages spanned (from ctid) and ideal pages of each key of a table:
-- ideal = ceil(bytes of the key's rows, with tuple header and line pointer, / usable page bytes).
CREATE FUNCTION key_pages(rel regclass, key text)
RETURNS TABLE (k text, nrows bigint, pages bigint, ideal bigint) LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT %I::text, count(*), count(DISTINCT (ctid::text::point)[0])::bigint,
				ceil(sum((pg_column_size(x.*) + 7) / 8 * 8 + 4) / 8168.0)::bigint
		 FROM %s x GROUP BY 1',
		key, rel);
END $$;

-- Content checksum of a relation, independent of row order.
CREATE FUNCTION checksum(rel regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
	EXECUTE format('SELECT count(*) || '':'' || coalesce(sum(hashtext(x::text)::bigint), 0) FROM %s x', rel) INTO r;
	RETURN r;
END $$;

CREATE ROLE ac_owner;
CREATE ROLE ac_other;
CREATE ROLE ac_reader;
GRANT CREATE ON SCHEMA public TO ac_owner;

-- The lines of EXPLAIN ANALYZE of a statement, alike on every version (no
-- "Index Searches", row counts without decimals; with_rows false: none).
CREATE FUNCTION analyzed(q text, with_rows bool DEFAULT true) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (analyze, costs off, timing off, summary off, buffers off) ' || q LOOP
		CONTINUE WHEN line ~ 'Index Searches:';
		line := regexp_replace(line, 'rows=(\d+)\.00 ', 'rows=\1 ', 'g');
		IF NOT with_rows THEN
			line := regexp_replace(line, 'rows=[0-9.]+ ', '', 'g');
		END IF;
		RETURN NEXT line;
	END LOOP;
END
$$;

-- What a plan reads, in words (EXPLAIN's text differs between versions):
-- the first tier with the probe, the key checked at start (a pruned UPDATE
-- or DELETE), or both tiers.
CREATE FUNCTION plan_of(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	probe bool := false;
	checked bool := false;
	archive bool := false;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (costs off) ' || q LOOP
		probe := probe OR line ~ 'ArchiveClusterProbe';
		checked := checked OR line ~ 'Archive Keys:';
		archive := archive OR line ~ ' on [a-z_]*archive\M';
	END LOOP;
	RETURN CASE WHEN archive THEN 'both tiers'
				WHEN probe AND checked THEN 'first tier alone, its key checked at start'
				WHEN probe THEN 'first tier, the archive probed on a miss'
				ELSE 'first tier alone' END;
END
$$;
