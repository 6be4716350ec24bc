-- Layout "plain": the seed's table as it is, never reorganised.
CREATE SEQUENCE t_id_seq;
CREATE TABLE t (
	ts timestamp NOT NULL,		-- time of insertion
	id int NOT NULL PRIMARY KEY,	-- from t_id_seq
	cid int NOT NULL,			-- customer, 0-9999
	pad varchar(200) NOT NULL	-- the rest of the payment, 0-200 characters
);
CREATE INDEX t_cid_ts ON t (cid, ts);

CREATE PROCEDURE bench_maybe_run(total bigint) LANGUAGE plpgsql AS $$ BEGIN END $$;
