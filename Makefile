# archive_cluster: PGXS build.
#
#   make && make install          build and install into the PostgreSQL found by pg_config
#   make installcheck             regression and isolation tests on private temporary servers
#                                 (run as a non-root user that can write this tree)

MODULE_big = archive_cluster
OBJS = \
	src/alter.o \
	src/archive_checks.o \
	src/archive_cluster.o \
	src/archive_writer.o \
	src/compact.o \
	src/config.o \
	src/constraints.o \
	src/guc.o \
	src/index_fill.o \
	src/index_rebuild.o \
	src/key_probe.o \
	src/key_range.o \
	src/key_sample.o \
	src/launcher.o \
	src/loose.o \
	src/mover.o \
	src/on_conflict.o \
	src/pace.o \
	src/pool.o \
	src/pool_views.o \
	src/register.o \
	src/replication.o \
	src/row_locks.o \
	src/run.o \
	src/stats.o \
	src/table_mode.o \
	src/threshold.o \
	src/tier_guard.o \
	src/tier_indexes.o \
	src/tier_lock_order.o \
	src/tier_lookup.o \
	src/tier_unique.o \
	src/tier_validate.o \
	src/tiers.o \
	src/triggers.o \
	src/unarchive.o \
	src/util.o \
	src/utility.o \
	src/view_buffer.o \
	src/view_cache.o \
	src/view_direct.o \
	src/view_identity.o \
	src/view_keys.o \
	src/worker.o \
	src/worker_job.o

EXTENSION = archive_cluster
DATA = archive_cluster--1.0.sql
PGFILEDESC = "archive_cluster - online clustered archiving"

PG_CPPFLAGS = -I$(srcdir)/src

REGRESS = setup register dml run alter unregister errors stats worker hostile_input dangling view_privileges security_attacks security_columns tier_constraints identity_always row_locks run_refused table_mode table_lookup compaction table_reindex update
REGRESS_OPTS = --temp-instance=./tmp_check --temp-config=$(srcdir)/test/regress.conf
ISOLATION = run_skip update_twice run_update run_update_key run_delete run_insert run_select run_twice run_batches alter_run register_dml key_unique column_drift unregister_run register_snapshot update_read_race run_pacing run_lock_hostage register_twice register_owner run_cic table_row_locks table_two_writers table_run_writer table_unique_wait table_merge_conflict table_key_range compact_writers table_unique_cic table_upsert_run table_lock_order mvcc_snapshot table_alter
TAP_TESTS = 1
ISOLATION_OPTS = --temp-instance=./tmp_check_iso --temp-config=$(srcdir)/test/regress.conf

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header: every object depends on every header of src/
# (after the include, which sets srcdir)
$(OBJS): $(wildcard $(srcdir)/src/*.h)
