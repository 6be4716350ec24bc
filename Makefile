# archive_cluster: PGXS build.
#
#   make && make install          build and install into the PostgreSQL found by pg_config
#   make installcheck             regression and isolation tests on private temporary servers
#                                 (run as a non-root user that can write this tree)

MODULE_big = archive_cluster
OBJS = \
	src/init.o \
	src/admin/alter.o \
	src/admin/register.o \
	src/admin/register_partitioned.o \
	src/admin/settings.o \
	src/admin/unregister.o \
	src/archive/archive_writer.o \
	src/archive/compact.o \
	src/archive/compact_due.o \
	src/archive/key_sample.o \
	src/archive/loose.o \
	src/archive/mover.o \
	src/pace/commit_latency.o \
	src/pace/pace.o \
	src/pace/progress.o \
	src/pace/replica_wait.o \
	src/pace/writeback.o \
	src/archive/run.o \
	src/archive/table_job.o \
	src/archive/threshold.o \
	src/base/cluster_index.o \
	src/base/guc.o \
	src/base/lock_waiters.o \
	src/base/subxact.o \
	src/partition/leaves.o \
	src/partition/leaf_pass.o \
	src/partition/leaf_space.o \
	src/partition/resume_key.o \
	src/partition/run_partitioned.o \
	src/base/key_probe.o \
	src/base/util.o \
	src/registry/archive_checks.o \
	src/registry/config.o \
	src/registry/partitioned.o \
	src/registry/constraints.o \
	src/registry/replication.o \
	src/registry/tiers.o \
	src/stats/index_fill.o \
	src/stats/stats.o \
	src/table/guard_indexes.o \
	src/table/key_range.o \
	src/table/on_conflict.o \
	src/table/table_mode.o \
	src/table/tier_guard.o \
	src/table/tier_indexes.o \
	src/table/tier_lock_order.o \
	src/table/tier_lookup.o \
	src/plan/planner.o \
	src/plan/probe_quals.o \
	src/plan/probe_path.o \
	src/plan/probe_scan.o \
	src/plan/probe_table.o \
	src/plan/probe_view.o \
	src/table/tier_unique.o \
	src/table/tier_unique_cache.o \
	src/table/tier_validate.o \
	src/table/unarchive.o \
	src/view/row_locks.o \
	src/view/triggers.o \
	src/view/view_buffer.o \
	src/view/view_cache.o \
	src/view/view_direct.o \
	src/view/view_identity.o \
	src/view/view_keys.o \
	src/worker/index_rebuild.o \
	src/worker/launcher.o \
	src/worker/pool.o \
	src/worker/pool_views.o \
	src/worker/utility.o \
	src/worker/worker.o \
	src/worker/worker_job.o \
	src/worker/worker_partitioned.o

EXTENSION = archive_cluster
DATA = archive_cluster--1.0.sql archive_cluster--1.0--1.1.sql
PGFILEDESC = "archive_cluster - online clustered archiving"

PG_CPPFLAGS = -I$(srcdir)/src

REGRESS = setup register dml run alter unregister errors stats worker partitioned hostile_input dangling view_privileges security_attacks security_columns tier_constraints identity_always row_locks run_refused table_mode table_lookup table_probe view_probe compaction table_reindex update
REGRESS_OPTS = --temp-instance=./tmp_check --temp-config=$(srcdir)/test/regress.conf
ISOLATION = part_leaf_pass run_skip update_twice run_update run_update_key run_delete run_insert run_select run_twice run_batches alter_run register_dml key_unique column_drift unregister_run register_snapshot update_read_race run_pacing run_lock_hostage register_twice register_owner run_cic table_row_locks table_two_writers table_run_writer table_unique_wait table_merge_conflict table_key_range compact_writers table_unique_cic table_upsert_run table_lock_order mvcc_snapshot table_alter table_probe_run view_probe_run
TAP_TESTS = 1
ISOLATION_OPTS = --temp-instance=./tmp_check_iso --temp-config=$(srcdir)/test/regress.conf

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header: every object depends on every header of src/
# (after the include, which sets srcdir)
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h)
