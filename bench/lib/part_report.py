#!/usr/bin/env python3
"""Reports of bench/partitions.sh.

  part_report.py p99 LOGPREFIX [JOBS_CSV]
      the inserts of pgbench's per-transaction logs LOGPREFIX.* (all of them,
      or with JOBS_CSV, lines "start,end,..." in epoch seconds, only those
      that ran while one of the jobs ran) -> "inserts,failed,avg_ms,p50_ms,p99_ms"
  part_report.py summary OUT
      OUT/summary.md from OUT's CSVs
"""
import csv
import glob
import math
import os
import statistics
import sys


def pct(values, p):
    """Nearest-rank percentile."""
    if not values:
        return float('nan')
    v = sorted(values)
    return v[max(0, math.ceil(p / 100.0 * len(v)) - 1)]


def read_log(prefix):
    """(latency_ms or None when it failed, start epoch, end epoch) of each
    transaction of pgbench's logs: client_id transaction_no time script_no
    time_epoch time_us [schedule_lag] [retries]; with --rate, time counts from
    the scheduled start."""
    out = []
    for path in glob.glob(prefix + '.*'):
        if path.endswith('.out'):
            continue
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 6 or p[2] == 'skipped':
                    continue
                end = int(p[4]) + int(p[5]) / 1e6
                if p[2] == 'failed':
                    out.append((None, end, end))
                else:
                    lat = int(p[2]) / 1e6
                    out.append((lat * 1000.0, end - lat, end))
    return out


def cmd_p99(prefix, jobs=None):
    rows = read_log(prefix)
    if jobs:
        win = []
        with open(jobs) as f:
            for line in f:
                p = line.strip().split(',')
                if len(p) >= 2 and p[0] and p[1]:
                    win.append((float(p[0]), float(p[1])))
        rows = [r for r in rows if any(r[2] >= a and r[1] <= b for a, b in win)]
    lat = [r[0] for r in rows if r[0] is not None]
    failed = sum(1 for r in rows if r[0] is None)
    avg = sum(lat) / len(lat) if lat else float('nan')
    print('%d,%d,%.3f,%.3f,%.3f' % (len(lat), failed, avg, pct(lat, 50), pct(lat, 99)))


# --------------------------------------------------------------------------
# the summary
# --------------------------------------------------------------------------
def rows_of(out, name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def med(v):
    v = [x for x in v if x == x]
    return statistics.median(v) if v else float('nan')


def mean(v):
    return sum(v) / len(v) if v else float('nan')


def ratio(a, b):
    return a / b if b else float('nan')


def mb(b):
    return '%.1f MB' % (b / 2**20)


def cmd_summary(out):
    meta = {r['key']: r['value'] for r in rows_of(out, 'meta.csv')}
    leaves = rows_of(out, 'leaves.csv')
    conv = rows_of(out, 'converge.csv')
    sizes = rows_of(out, 'sizes.csv')
    bufs = rows_of(out, 'buffers.csv')
    mix = rows_of(out, 'mix.csv')
    p99 = rows_of(out, 'p99.csv')
    rr = rows_of(out, 'rr.csv')
    L = []
    dur = int(meta.get('duration_s', '0'))
    L.append('# Partitioned tables: archive_cluster passes against CLUSTER, per closed partition')
    L.append('')
    L.append('`%s` (%s, %d min %d s; code `%s`; %s; %s cores, %s; shared_buffers %s). One throw-away server, '
             'one database, three partitioned copies of the same rows side by side. Library: %s.'
             % (meta['command'], meta['date'], dur // 60, dur % 60, meta['git'], meta['postgres'], meta['cores'],
                meta['cpu'], meta['shared_buffers'], meta.get('library', '?')))
    L.append('')
    closed = [l for l in leaves if l['table'] == 'pt_plain' and l['closed'] == 't']
    opn = [l for l in leaves if l['table'] == 'pt_plain' and l['closed'] != 't']
    rows_closed = mean([int(l['rows']) for l in closed])
    pages_closed = mean([int(l['heap_pages']) for l in closed])
    L.append('The seed\'s table `(ts timestamp, id int, cid int, pad varchar(200))`: %s rows, 10,000 customers, pads '
             'of 0-200 characters, ids in ts order, ts spread evenly so that all customers\' rows interleave; '
             'partitioned by range of ts, one partition a day, %s partitions: %d closed ones of %s rows on average '
             '(%.1f rows per customer, %s heap pages: %.2f pages of rows per customer), and the newest, open, '
             'holding the last ~12 hours (%s rows). Indexes (id) and (cid, ts), built after the fill. '
             '`pt_plain`: as filled; `pt_ac`: registered (`archive_cluster_register(\'pt_ac\', \'{cid,ts}\', \'ts\', '
             '\'1 hour\', mode => \'partitioned\')`) and converged by `archive_cluster_run(\'pt_ac\', max_batches => 1)` '
             'until nothing is due, VACUUM of each closed partition, the same again, VACUUM again; `pt_cl`: each closed '
             'partition `CLUSTER`ed on its (cid, ts) index, then VACUUM. The worker is off '
             '(`archive_cluster.enabled = off`), and autovacuum off until the passes and CLUSTERs are done.'
             % (format(int(meta['rows']), ','), meta['days'], len(closed), format(int(rows_closed), ','),
                rows_closed / 10000, format(int(pages_closed), ','), pages_closed / 10000, format(sum(int(l['rows']) for l in opn), ',')))
    L.append('')

    # ---- 2: select all buffers
    L.append('## 2. "select all" of one customer on the closed partitions: buffers')
    L.append('')
    L.append('`EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM <t> WHERE cid = $1 AND ts < <start of the open partition> '
             'ORDER BY ts` for %s customers (a fixed sample): shared hit + read buffers of the plan; heap pages: '
             'distinct (partition, block) of the rows\' ctids; the rest of the buffers are index pages (an index '
             'descent per partition and the leaf pages of the key). Also the mix\'s "select all" (every partition, '
             'the open one too). Goal: pt_ac / pt_cl <= 1.1 on the closed partitions.' % meta['sample'])
    L.append('')
    L.append('| scope | table | rows per key | buffers per key (mean) | heap pages per key | other (index) buffers | '
             'pt_ac / pt_cl | pt_plain / pt_ac |')
    L.append('|---|---|---|---|---|---|---|---|')
    verdict = None
    for scope in ('closed', 'all'):
        m = {}
        for t in ('pt_plain', 'pt_ac', 'pt_cl'):
            sel = [r for r in bufs if r['table'] == t and r['scope'] == scope]
            if not sel:
                continue
            m[t] = (mean([int(r['nrows']) for r in sel]), mean([int(r['buffers']) for r in sel]),
                    mean([int(r['heap_pages']) for r in sel]))
        for t in ('pt_plain', 'pt_ac', 'pt_cl'):
            if t not in m:
                continue
            a = ''
            b = ''
            if t == 'pt_ac' and 'pt_cl' in m:
                x = ratio(m['pt_ac'][1], m['pt_cl'][1])
                a = '**%.3f**' % x
                if scope == 'closed':
                    verdict = x
            if t == 'pt_ac' and 'pt_plain' in m:
                b = '**%.2f**' % ratio(m['pt_plain'][1], m['pt_ac'][1])
            L.append('| %s | %s | %.1f | %.1f | %.1f | %.1f | %s | %s |'
                     % (scope, t, m[t][0], m[t][1], m[t][2], m[t][1] - m[t][2], a, b))
    if verdict is not None:
        L.append('')
        L.append('pt_ac / pt_cl on the closed partitions: **%.3f**, goal <= 1.1: **%s**.'
                 % (verdict, 'met' if verdict <= 1.1 else 'not met'))
    L.append('')

    # ---- 3: converging
    L.append('## 3. Cost of converging, per closed partition')
    L.append('')
    L.append('Each operation timed alone after a CHECKPOINT (so each pays its full-page images), nobody else '
             'writing; WAL: `pg_current_wal_lsn()` before and after; peak extra disk: the most the database\'s '
             'directory (and `pgsql_tmp`) held over what it held before the operation, sampled every 50 ms with '
             '`du`. Sizes in 8-kB pages, heap / indexes of the partition; "leaf" = its size as filled.')
    L.append('')
    L.append('| table | step | partitions | seconds (sum) | seconds per partition | WAL per partition | WAL / leaf '
             'heap+indexes | peak extra disk per partition (mean; max) | heap pages after (mean) | index pages '
             'after (mean) |')
    L.append('|---|---|---|---|---|---|---|---|---|---|')
    lv = {(l['table'], l['leaf']): l for l in leaves}
    base = {}
    for t in ('pt_ac', 'pt_cl'):
        cl = [l for l in leaves if l['table'] == t and l['closed'] == 't']
        base[t] = (mean([int(l['heap_pages']) for l in cl]), mean([int(l['index_pages']) for l in cl]))
    order = [('pt_ac', 'pass1'), ('pt_ac', 'vacuum1'), ('pt_ac', 'pass2'), ('pt_ac', 'vacuum2'),
             ('pt_ac', 'pass3'), ('pt_cl', 'cluster'), ('pt_cl', 'vacuum')]
    tot = {}
    for t, ph in order:
        sel = [r for r in conv if r['table'] == t and r['phase'] == ph and r['leaf']]
        if not sel:
            continue
        secs = [float(r['seconds']) for r in sel]
        wal = [int(r['wal_bytes']) for r in sel]
        peak = [int(r['peak_extra_bytes']) for r in sel]
        leafb = mean([(int(lv[(t, r['leaf'])]['heap_pages']) + int(lv[(t, r['leaf'])]['index_pages'])) * 8192
                      for r in sel])
        tot.setdefault(t, [0.0, 0])
        tot[t][0] += sum(secs)
        tot[t][1] += sum(wal)
        L.append('| %s | %s | %d | %.1f | %.2f | %s | %.2f | %s; %s | %.0f (%.2fx the leaf) | %.0f (%.2fx) |'
                 % (t, ph, len(sel), sum(secs), mean(secs), mb(mean(wal)), ratio(mean(wal), leafb), mb(mean(peak)),
                    mb(max(peak)), mean([int(r['heap_pages_after']) for r in sel]),
                    ratio(mean([int(r['heap_pages_after']) for r in sel]), base[t][0]),
                    mean([int(r['index_pages_after']) for r in sel]),
                    ratio(mean([int(r['index_pages_after']) for r in sel]), base[t][1])))
    L.append('')
    if 'pt_ac' in tot and 'pt_cl' in tot:
        L.append('All steps together: passes and VACUUMs %.1f s and %s of WAL; CLUSTER and VACUUM %.1f s and %s: '
                 'time **%.2fx**, WAL **%.2fx** CLUSTER\'s.'
                 % (tot['pt_ac'][0], mb(tot['pt_ac'][1]), tot['pt_cl'][0], mb(tot['pt_cl'][1]),
                    ratio(tot['pt_ac'][0], tot['pt_cl'][0]), ratio(tot['pt_ac'][1], tot['pt_cl'][1])))
        L.append('')
    chk = [r for r in conv if r['phase'] == 'check']
    for r in chk:
        L.append('After the second VACUUM, `archive_cluster_run(\'pt_ac\')`: **%s**%s.'
                 % (r['status'], ('; ' + r['detail']) if r['detail'] else ''))
        L.append('')
    s = {(r['table'], r['stage']): r for r in sizes}
    if s:
        L.append('| table | stage | closed partitions: heap pages | their index pages | open partition: heap pages | '
                 'its index pages |')
        L.append('|---|---|---|---|---|---|')
        for r in sizes:
            L.append('| %s | %s | %s | %s | %s | %s |' % (r['table'], r['stage'], format(int(r['closed_heap']), ','),
                                                         format(int(r['closed_index']), ','),
                                                         format(int(r['open_heap']), ','),
                                                         format(int(r['open_index']), ',')))
        if ('pt_ac', 'converged') in s and ('pt_cl', 'clustered') in s:
            a, c = s[('pt_ac', 'converged')], s[('pt_cl', 'clustered')]
            L.append('')
            L.append('Converged, closed partitions, pt_ac / pt_cl: heap **%.2fx**, indexes **%.2fx**.'
                     % (ratio(int(a['closed_heap']), int(c['closed_heap'])),
                        ratio(int(a['closed_index']), int(c['closed_index']))))
        L.append('')
    # the peak size of a partition: the passes' largest size after a step;
    # CLUSTER's: the leaf and its new files together, until it commits
    pk = {}
    for t in ('pt_ac', 'pt_cl'):
        per = []
        for l in [l for l in leaves if l['table'] == t and l['closed'] == 't']:
            leafp = int(l['heap_pages']) + int(l['index_pages'])
            sel = [r for r in conv if r['table'] == t and r['leaf'] == l['leaf'] and r['heap_pages_after']]
            after = max([int(r['heap_pages_after']) + int(r['index_pages_after']) for r in sel] + [leafp])
            if t == 'pt_cl':
                extra = max([int(r['peak_extra_bytes']) for r in sel if r['phase'] == 'cluster'] + [0]) / 8192
                after = max(after, leafp + extra)
            per.append((after, leafp))
        if per:
            pk[t] = (mean([a for a, _ in per]), mean([b for _, b in per]))
    if 'pt_ac' in pk and 'pt_cl' in pk:
        L.append('Peak size of a closed partition (heap + indexes; mean over the partitions): passes %s pages '
                 '(**%.2fx** the leaf as filled: after a step, before the VACUUM that follows it), CLUSTER %s pages '
                 '(**%.2fx**: the leaf and its new files until it commits, the sampled peak).'
                 % (format(int(pk['pt_ac'][0]), ','), ratio(*pk['pt_ac']), format(int(pk['pt_cl'][0]), ','),
                    ratio(*pk['pt_cl'])))
        L.append('')
    spill = rows_of(out, 'spill.csv')
    notr = [r for r in spill if int(r['pages_after']) > 1.2 * int(r['filled_pages'])]
    if notr:
        cl = {r['leaf'].replace('pt_cl_', 'pt_ac_'): r for r in conv if r['table'] == 'pt_cl' and r['phase'] == 'cluster'}
        r0 = notr[0]
        p2 = [r for r in conv if r['leaf'] == r0['leaf'] and r['phase'] == 'pass2']
        L.append('**Not truncated**: after the tail pass and the VACUUM after it, %d of %d closed partitions '
                 'of pt_ac still have over 1.2x the heap pages they were filled with, and `archive_cluster_run` finds '
                 'nothing due. E.g. %s: filled on %s pages; the tail pass found the file at %s pages, about '
                 'its first %s empty (what VACUUM freed of the rows as filled), and %s; %s rows went onto %s pages '
                 'past the end of that file, so the VACUUM after it cannot truncate: %s pages now%s. (`spill.csv`; '
                 '`raw/tail_*.txt`: the rows per 100 blocks.)'
                 % (len(notr), len(spill), r0['leaf'], r0['filled_pages'], r0['pages_before_pass2'], r0['filled_pages'],
                    ('wrote ' + p2[0]['detail'].split(': ', 1)[1].rstrip('; ')) if p2 and ': ' in p2[0]['detail']
                    else 'wrote its rows', r0['rows_past_the_end'], r0['pages_past_the_end'], r0['pages_after'],
                    ('; CLUSTER wrote the same rows on %s pages' % cl[r0['leaf']]['heap_pages_after'])
                    if r0['leaf'] in cl else ''))
        L.append('')

    # ---- 4: mixed workload
    L.append('## 4. The seed\'s mixed workload: pt_ac against pt_plain')
    L.append('')
    L.append('`pgbench -M prepared --max-tries=10 -c 10 -j 2 -T %s`: insert 25%%, update 25%% (last 3600 ids), select '
             'one 25%%, select hour 15%%, select all 10%% (every partition) (`bench/lib/part_*.pgbench`); %s rounds, '
             'the order alternated; a CHECKPOINT before and a VACUUM after each.' % (meta['secs'], meta['rounds']))
    L.append('')
    if mix:
        tp = {t: [float(r['tps']) for r in mix if r['table'] == t] for t in ('pt_plain', 'pt_ac')}
        per = []
        for rd in sorted({int(r['round']) for r in mix}):
            x = {r['table']: float(r['tps']) for r in mix if int(r['round']) == rd}
            if 'pt_plain' in x and 'pt_ac' in x:
                per.append(ratio(x['pt_ac'], x['pt_plain']))
        L.append('| table | tps per round | median | select all latency (ms, median of rounds) | failed |')
        L.append('|---|---|---|---|---|')
        for t in ('pt_plain', 'pt_ac'):
            sel = [r for r in mix if r['table'] == t]
            L.append('| %s | %s | %.1f | %.3f | %d |'
                     % (t, ' / '.join('%.0f' % float(r['tps']) for r in sel), med(tp[t]),
                        med([float(r['lat_select_all']) for r in sel if r['lat_select_all']]),
                        sum(int(r['failed'] or 0) for r in sel)))
        L.append('')
        L.append('pt_ac / pt_plain (medians): **%.2fx**; per round: %s.'
                 % (ratio(med(tp['pt_ac']), med(tp['pt_plain'])), ', '.join('%.2f' % x for x in per)))
        L.append('')

    # ---- 5: p99 of inserts
    L.append('## 5. p99 of concurrent inserts while a closed partition is passed or CLUSTERed')
    L.append('')
    L.append('`pgbench -M prepared -c 4 -j 2 -T %s%s`, the seed\'s insert into the open partition, per-transaction '
             'log; first with no job, then while jobs run back to back from 2 s in until pgbench ends: '
             '`archive_cluster_run(\'pt_ac\', force => true, max_batches => 1)` (a forced pass over the oldest '
             'closed partition, paced by effect as by default), or `CLUSTER` of the same partition of pt_cl (ACCESS '
             'EXCLUSIVE on that partition only). The inserts counted "during" are those that ran while a job did. '
             'A VACUUM of the partition after each window.'
             % (meta['secs'], (' -R %s' % meta['insert_rate']) if meta['insert_rate'] != '0' else ''))
    L.append('')
    if p99:
        L.append('| round | table | p99 without a job (ms) | p99 during the jobs (ms) | ratio | inserts during | '
                 'jobs | job seconds (paced) |')
        L.append('|---|---|---|---|---|---|---|---|')
        rat = {'pt_ac': [], 'pt_cl': []}
        during = {'pt_ac': [], 'pt_cl': []}
        for rd in sorted({int(r['round']) for r in p99}):
            for t in ('pt_ac', 'pt_cl'):
                b = [r for r in p99 if int(r['round']) == rd and r['table'] == t and r['window'] == 'none']
                j = [r for r in p99 if int(r['round']) == rd and r['table'] == t and r['window'] == 'job']
                if not b or not j:
                    continue
                b, j = b[0], j[0]
                x = ratio(float(j['p99_ms']), float(b['p99_ms']))
                rat[t].append(x)
                during[t].append(float(j['p99_ms']))
                L.append('| %d | %s | %.2f | %.2f | %.2f | %s | %s | %s (%s) |'
                         % (rd, t, float(b['p99_ms']), float(j['p99_ms']), x, j['inserts'], j['jobs'],
                            j['job_seconds'], j['paced_s'] or '-'))
        L.append('')
        L.append('Median of the rounds\' ratios: during passes **%.2fx**, during CLUSTER **%.2fx**; p99 during '
                 'passes / during CLUSTER (medians): **%.2fx**.'
                 % (med(rat['pt_ac']), med(rat['pt_cl']), ratio(med(during['pt_ac']), med(during['pt_cl']))))
        L.append('')

    # ---- 6: REPEATABLE READ
    L.append('## 6. A REPEATABLE READ reader across a pass (and across CLUSTER)')
    L.append('')
    for r in rr:
        L.append('- %s' % r['text'])
    L.append('')
    L.append('## 7. REPACK (CONCURRENTLY) per partition')
    L.append('')
    L.append(meta.get('repack', 'not measured'))
    L.append('')
    L.append('Raw data: %s (meta, leaves, converge, spill, sizes, buffers, mix, p99, rr, runs CSVs; raw/: pgbench outputs '
             'and logs, plans, job lists; server.log).' % out)
    with open(os.path.join(out, 'summary.md'), 'w') as f:
        f.write('\n'.join(L) + '\n')


if __name__ == '__main__':
    if sys.argv[1] == 'p99':
        cmd_p99(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    elif sys.argv[1] == 'summary':
        cmd_summary(sys.argv[2])
    else:
        sys.exit('part_report.py: p99 or summary')
