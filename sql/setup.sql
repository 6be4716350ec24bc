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
