-- mean buffers (hit + read) of "select all" (EXPLAIN ANALYZE BUFFERS, top node) over customers 50, 100, ..., 10000
CREATE OR REPLACE FUNCTION sel_all_buffers() RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE c int; tot bigint := 0; line text; m text[];
BEGIN
  FOR c IN SELECT g * 50 FROM generate_series(1, 200) g LOOP
    FOR line IN EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) SELECT * FROM t WHERE cid = %s ORDER BY ts', c) LOOP
      m := regexp_match(line, 'Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?');
      IF m IS NOT NULL THEN tot := tot + coalesce(m[1]::bigint,0) + coalesce(m[2]::bigint,0); EXIT; END IF;
    END LOOP;
  END LOOP;
  RETURN round(tot / 200.0, 1);
END $$;
