#!/usr/bin/python3
"""Numbers and plots of bench/bench.sh.

  report.py lat PREFIX LAYOUT WORKLOAD STEP NAMES
      per-transaction pgbench logs PREFIX.* -> CSV lines
      layout,workload,step_rows,type,count,avg_ms,p99_ms (NAMES: the scripts'
      names, comma-separated, in -f order)
  report.py p99window RAWDIR LAYOUT T0 T1 ROWS_MOVED TABLE_ROWS
      p99 of the inserts of p99_base_LAYOUT.* against those of p99_run_LAYOUT.*
      that overlapped [T0, T1] (epoch seconds) -> focused.csv lines
  report.py report RESULTS_DIR
      plots (PNG) and summary.md with the targets of DESIGN.md
"""
import csv
import glob
import math
import os
import sys


def pct(values, p):
    """Nearest-rank percentile."""
    if not values:
        return float('nan')
    v = sorted(values)
    k = max(0, math.ceil(p / 100.0 * len(v)) - 1)
    return v[k]


def read_log(prefix):
    """Transactions of pgbench's per-transaction logs (run with --max-tries, so
    the last column is the retries): (script_no, latency_us or None when it
    failed, end_epoch, retries)."""
    out = []
    for path in glob.glob(prefix + '.*'):
        if path.endswith('.out'):
            continue
        with open(path) as f:
            for line in f:
                p = line.split()
                # client_id transaction_no time script_no time_epoch time_us [schedule_lag] retries
                if len(p) < 7 or p[2] == 'skipped':
                    continue
                lat = None if p[2] == 'failed' else int(p[2])
                out.append((int(p[3]), lat, int(p[4]) + int(p[5]) / 1e6, int(p[-1])))
    return out


def cmd_lat(prefix, layout, workload, step, names):
    names = names.split(',')
    rows = read_log(prefix)
    for i, name in enumerate(names):
        mine = [r for r in rows if r[0] == i]
        lat = [r[1] / 1000.0 for r in mine if r[1] is not None]
        failed = sum(1 for r in mine if r[1] is None)
        retried = sum(1 for r in mine if r[3] > 0)
        avg = sum(lat) / len(lat) if lat else float('nan')
        print('%s,%s,%s,%s,%d,%.3f,%.3f,%d,%d' % (layout, workload, step, name, len(lat), avg, pct(lat, 99),
                                                  retried, failed))


def cmd_p99window(raw, layout, t0, t1, moved, table_rows):
    t0, t1 = float(t0), float(t1)
    base = [r[1] / 1000.0 for r in read_log(os.path.join(raw, 'p99_base_' + layout)) if r[1] is not None]
    during = []
    for _, lat_us, end, _ in read_log(os.path.join(raw, 'p99_run_' + layout)):
        if lat_us is None:
            continue
        start = end - lat_us / 1e6
        if end >= t0 and start <= t1:
            during.append(lat_us / 1000.0)
    p_base, p_run = pct(base, 99), pct(during, 99)
    bench = 'p99_inserts'
    print('%s,%s,%s,run_seconds,%.3f,s' % (bench, layout, table_rows, t1 - t0))
    print('%s,%s,%s,run_rows,%s,rows' % (bench, layout, table_rows, moved or 0))
    print('%s,%s,%s,inserts_without_run,%d,inserts' % (bench, layout, table_rows, len(base)))
    print('%s,%s,%s,inserts_during_run,%d,inserts' % (bench, layout, table_rows, len(during)))
    print('%s,%s,%s,avg_without_run_ms,%.3f,ms' % (bench, layout, table_rows, sum(base) / max(len(base), 1)))
    print('%s,%s,%s,avg_during_run_ms,%.3f,ms' % (bench, layout, table_rows, sum(during) / max(len(during), 1)))
    print('%s,%s,%s,p99_without_run_ms,%.3f,ms' % (bench, layout, table_rows, p_base))
    print('%s,%s,%s,p99_during_run_ms,%.3f,ms' % (bench, layout, table_rows, p_run))
    print('%s,%s,%s,p99_ratio,%.2f,x' % (bench, layout, table_rows, p_run / p_base if p_base else float('nan')))


# --------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------
LAYOUTS = ['plain', 'sql', 'ext', 'tab']
LABEL = {'plain': 'plain table', 'sql': 'seed design in SQL/PL/pgSQL', 'ext': 'archive_cluster, view mode',
         'tab': 'archive_cluster, table mode'}
STYLE = {'plain': ('tab:red', 'o'), 'sql': ('tab:blue', 's'), 'ext': ('tab:green', '^'), 'tab': ('tab:purple', 'v')}
TYPES = ['insert', 'update', 'select_one', 'select_hour', 'select_all']


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float('nan')


def plots(res, steps, lat, runs, cycle):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    made = []
    layouts = [l for l in LAYOUTS if any(s['layout'] == l for s in steps)]

    # the seed's figure: average request time per type against rows
    for stat, title in (('avg_ms', 'average'), ('p99_ms', 'p99')):
        fig, axes = plt.subplots(1, 5, figsize=(20, 4.2))
        for ax, typ in zip(axes, TYPES):
            for l in layouts:
                pts = sorted((int(r['step_rows']), fnum(r[stat])) for r in lat
                             if r['layout'] == l and r['workload'] == 'mixed' and r['type'] == typ)
                if pts:
                    c, m = STYLE[l]
                    ax.plot([p[0] / 1e6 for p in pts], [p[1] for p in pts], marker=m, color=c, label=LABEL[l])
            ax.set_title('"%s"' % typ.replace('_', ' '))
            ax.set_xlabel('rows (millions)')
            ys = [y for line in ax.get_lines() for y in line.get_ydata() if y > 0]
            if ys and max(ys) / min(ys) > 20:
                ax.set_yscale('log')
            else:
                ax.set_ylim(bottom=0)
            ax.grid(True, which='both', alpha=0.3)
        axes[0].set_ylabel('%s request time (ms)' % title)
        axes[0].legend(fontsize=8)
        fig.suptitle('Seed workload, %s request time per type against table size' % title)
        fig.tight_layout()
        name = 'request_time_%s.png' % ('avg' if stat == 'avg_ms' else 'p99')
        fig.savefig(os.path.join(res, name), dpi=80)
        plt.close(fig)
        made.append(name)

    # throughput, buffers per select all, database size
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for key, ax, ylabel, scale in (('tps', axes[0], 'mixed workload tps (10 clients)', 1),
                                   ('select_all_buffers', axes[1], 'buffers per "select all" (hit + read)', 1),
                                   ('db_bytes', axes[2], 'database size (GiB)', 1.0 / 2 ** 30)):
        for l in layouts:
            pts = sorted((int(r['step_rows']), fnum(r[key]) * scale) for r in steps if r['layout'] == l)
            c, m = STYLE[l]
            ax.plot([p[0] / 1e6 for p in pts], [p[1] for p in pts], marker=m, color=c, label=LABEL[l])
        ax.set_xlabel('rows (millions)')
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if key == 'select_all_buffers' and cycle:
            # the fourth line: the same rows rewritten in (cid, ts) order
            # (pg_repack -o cid,ts), measured with each cycle of the ext layout
            # (tab's if ext was not run)
            src = 'ext' if any(r['layout'] == 'ext' for r in cycle) else 'tab'
            pts = sorted((int(r['step_rows']), fnum(r['repacked'])) for r in cycle if r['layout'] == src and r['step_rows'])
            ax.plot([p[0] / 1e6 for p in pts], [p[1] for p in pts], marker='x', color='black', linestyle='--',
                    label='the same rows repacked (cid, ts)')
        ys = [y for line in ax.get_lines() for y in line.get_ydata() if y > 0]
        if key != 'db_bytes' and ys and max(ys) / min(ys) > 20:
            ax.set_yscale('log')
        else:
            ax.set_ylim(bottom=0)
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(res, 'tps_buffers_size.png'), dpi=80)
    plt.close(fig)
    made.append('tps_buffers_size.png')

    # target 2 over a cycle, at each step: before a run, after it, after the
    # compaction that follows, and the same rows repacked
    cl = [l for l in ('ext', 'tab') if any(r['layout'] == l for r in cycle)]
    if cl:
        fig, axes = plt.subplots(1, len(cl), figsize=(6.5 * len(cl), 4.2), squeeze=False)
        for ax, l in zip(axes[0], cl):
            rows = sorted((r for r in cycle if r['layout'] == l), key=lambda r: int(r['step_rows']))
            x = [int(r['step_rows']) / 1e6 for r in rows]
            for col, lab, sty in (('before_run', 'full tail, just before a run', ('tab:red', 'o', '-')),
                                  ('after_run', 'right after the run', ('tab:orange', 's', '-')),
                                  ('after_compaction', 'right after the compaction', ('tab:green', '^', '-')),
                                  ('repacked', 'the same rows repacked (cid, ts)', ('black', 'x', '--'))):
                ax.plot(x, [fnum(r[col]) for r in rows], marker=sty[1], color=sty[0], linestyle=sty[2], label=lab)
            ax.set_title('"select all" buffers over a cycle: %s' % LABEL[l])
            ax.set_xlabel('rows (millions)')
            ax.set_ylabel('buffers per "select all" (hit + read)')
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(res, 'cycle.png'), dpi=80)
        plt.close(fig)
        made.append('cycle.png')

    # archive runs
    if runs:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for l in ('sql', 'ext', 'tab'):
            pts = sorted((int(r['table_rows']), fnum(r['seconds']) / max(fnum(r['rows_moved']), 1) * 1e6 / 1000)
                         for r in runs if r['layout'] == l)
            if pts:
                c, m = STYLE[l]
                ax.plot([p[0] / 1e6 for p in pts], [p[1] for p in pts], marker=m, color=c,
                        label=LABEL[l] + (' (WITH ... DELETE ... INSERT ... ORDER BY)' if l == 'sql' else ' (archive_cluster_run)'))
        ax.set_xlabel('table rows when the run started (millions)')
        ax.set_ylabel('run time per 1,000 rows moved (ms)')
        ax.set_title('Archive runs during growth (each ~550k rows)')
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(res, 'runs.png'), dpi=80)
        plt.close(fig)
        made.append('runs.png')
    return made


def p99_variants(res, name):
    """The p99 variants of a run (label -> settings, from NAME in RES) and
    their labels (ext_s1, ext_c2, ...) in order."""
    settings = {}
    if os.path.exists(os.path.join(res, name)):
        with open(os.path.join(res, name)) as fh:
            for row in csv.reader(fh):
                settings[row[0]] = ','.join(row[1:])
    return settings, sorted(settings, key=lambda v: int(v[5:]))


def cmd_report(res):
    meta = {}
    with open(os.path.join(res, 'meta.csv')) as f:
        for line in f:
            k, _, v = line.rstrip('\n').partition(',')
            meta[k] = v
    steps = load(os.path.join(res, 'steps.csv'))
    lat = load(os.path.join(res, 'latency.csv'))
    runs = load(os.path.join(res, 'runs.csv'))
    foc = load(os.path.join(res, 'focused.csv'))
    cycle = load(os.path.join(res, 'cycle.csv')) if os.path.exists(os.path.join(res, 'cycle.csv')) else []
    try:
        made = plots(res, steps, lat, runs, cycle)
    except ImportError as e:
        made = []
        print('report.py: no plots (%s)' % e, file=sys.stderr)

    def f(bench, layout, metric, which=-1):
        vals = [r for r in foc if r['benchmark'] == bench and r['layout'] == layout and r['metric'] == metric]
        return fnum(vals[which]['value']) if vals else float('nan')

    def frow(bench, layout, metric, which=-1):
        vals = [r for r in foc if r['benchmark'] == bench and r['layout'] == layout and r['metric'] == metric]
        return vals[which] if vals else None

    final = {}
    for l in LAYOUTS:
        ls = [r for r in steps if r['layout'] == l]
        if ls:
            final[l] = max(ls, key=lambda r: int(r['step_rows']))

    def ratio(a, b):
        return a / b if b and not math.isnan(a) and not math.isnan(b) else float('nan')

    def fmt(x, d=2):
        return 'n/a' if x is None or (isinstance(x, float) and math.isnan(x)) else ('%.*f' % (d, x))

    L = []
    L.append('# Benchmark summary')
    L.append('')
    L.append('- date: %s' % meta.get('date', '?'))
    L.append('- command: `%s`' % meta.get('command', '?'))
    L.append('- machine: %s, %s cores, %s RAM; %s; kernel %s' % (meta.get('cpu'), meta.get('cores'), meta.get('ram'),
                                                                 meta.get('postgres'), meta.get('kernel')))
    L.append('- each server in a memory cgroup of %s, shared_buffers %s; final size %s rows, steps %s; mixed pgbench runs of %s s'
             % (meta.get('mem'), meta.get('shared_buffers'), meta.get('rows'), meta.get('steps'), meta.get('duration_s')))
    L.append('- extension: %s; git %s' % (meta.get('extension_so'), meta.get('git')))
    L.append('')

    # targets: each for archive_cluster's view mode (layout ext) and its
    # table mode (layout tab)
    L.append('## Targets (DESIGN.md "Performance targets")')
    L.append('')
    L.append('View mode: layout `ext` (`t` a view over `t_current` and `t_archive`); table mode: layout `tab` (`t` a table, '
             '`t_archive` its inheritance child). Targets 3 and 6 compare both with the plain table in one server, '
             'in the same alternating rounds.')
    L.append('')
    L.append('| # | mode | target | measured | met? |')
    L.append('|---|---|---|---|---|')

    def verdict(ok):
        return 'n/a' if ok is None else ('yes' if ok else '**no**')

    MODES = (('ext', 'view', ''), ('tab', 'table', '_tab'))
    # 1: the mixed workload at the final size
    for m, mode, sfx in MODES:
        if m not in final:
            L.append('| 1 | %s | mixed tps at the final size: >= 10x plain, >= 1.1x SQL design | not measured | n/a |' % mode)
            continue
        te, tp, ts_ = fnum(final[m]['tps']), fnum(final.get('plain', {}).get('tps')), fnum(final.get('sql', {}).get('tps'))
        r1, r2 = ratio(te, tp), ratio(te, ts_)
        ok = None if math.isnan(r1) or math.isnan(r2) else (r1 >= 10 and r2 >= 1.1)
        other = ''
        if m == 'tab' and 'ext' in final:
            other = ' (view mode: %s tps, table/view %sx)' % (fmt(fnum(final['ext']['tps']), 1),
                                                           fmt(ratio(te, fnum(final['ext']['tps']))))
        L.append('| 1 | %s | mixed tps at %s rows: >= 10x plain, >= 1.1x SQL design | %s tps vs %s (plain) and %s (SQL): **%sx** and **%sx**%s | %s |'
                 % (mode, final[m]['step_rows'], fmt(te, 1), fmt(tp, 1), fmt(ts_, 1), fmt(r1), fmt(r2), other, verdict(ok)))

    # 2: "select all" buffers against the same rows repacked
    def buffers_part(l):
        rep = fmt(f('select_all_buffers', 'repacked_' + l, 'buffers'), 1)
        if not math.isnan(f('select_all_buffers', l, 'ratio')):
            return '%s: %s buffers vs %s repacked = **%sx**' % (l, fmt(f('select_all_buffers', l, 'buffers'), 1), rep,
                                                                fmt(f('select_all_buffers', l, 'ratio')))
        if not math.isnan(f('select_all_buffers', l, 'ratio_after_run')):
            return ('%s: %s buffers right after a run, %s with a full tail, vs %s repacked = **%sx** after a run, %sx before, %sx cycle mean'
                    % (l, fmt(f('select_all_buffers', l, 'buffers_after_run'), 1),
                       fmt(f('select_all_buffers', l, 'buffers_before_run'), 1), rep,
                       fmt(f('select_all_buffers', l, 'ratio_after_run')), fmt(f('select_all_buffers', l, 'ratio_before_run')),
                       fmt(f('select_all_buffers', l, 'ratio_cycle_mean'))))
        return None

    for m, mode, sfx in MODES:
        r = f('select_all_buffers', m, 'ratio_after_run')
        shown = ['plain', 'sql', 'ext'] if m == 'ext' else ['tab']
        parts = [p for p in (buffers_part(l) for l in shown) if p]
        L.append('| 2 | %s | buffers per "select all" <= 1.5x the same rows rewritten in (cid, ts) order (verdict: %s right after a run) | %s | %s |'
                 % (mode, m, '; '.join(parts) or 'not measured', verdict(None if math.isnan(r) else r <= 1.5)))

    # 2 with compaction: right after the compaction, the cycle mean (from it
    # to a full tail), at the final size and at every step (cycle.csv)
    csettings, cvariants = p99_variants(res, 'compaction_p99_settings.csv')
    for m, mode, sfx in MODES:
        if not frow('select_all_buffers', m, 'ratio_after_compaction'):
            continue
        rb = f('select_all_buffers', 'repacked_' + m, 'buffers')
        ra = f('select_all_buffers', m, 'ratio_after_compaction')
        rc = f('select_all_buffers', m, 'ratio_cycle_mean_compacted')
        steps_r = []
        ok = not math.isnan(ra) and ra <= 1.2 and not math.isnan(rc) and rc <= 1.5
        for r in sorted((r for r in cycle if r['layout'] == m), key=lambda r: int(r['step_rows'])):
            a_c = ratio(fnum(r['after_compaction']), fnum(r['repacked']))
            mean = ratio((fnum(r['after_compaction']) + fnum(r['before_run'])) / 2, fnum(r['repacked']))
            steps_r.append('%s: %sx / %sx' % (r['table_rows'], fmt(a_c), fmt(mean)))
            ok = ok and a_c <= 1.2 and mean <= 1.5
        L.append('| 2c | %s | with compaction: "select all" buffers <= 1.2x the same rows repacked right after a compaction, <= 1.5x over the cycle (mean of right after it and a full tail), at every step | '
                 'at the final size %s buffers after the compaction vs %s repacked: **%sx**, cycle mean **%sx**; every step (rows: after / mean): %s | %s |'
                 % (mode, fmt(f('select_all_buffers', m, 'buffers_after_compaction'), 1), fmt(rb, 1), fmt(ra), fmt(rc),
                    '; '.join(steps_r) or 'n/a', verdict(ok)))
        wa = f('write_amplification', m, 'bytes')
        L.append('| 2w | %s | write amplification: bytes written into the archive by runs and compactions per byte archived <= 4x | '
                 '**%sx** (rows: %sx; %s compactions) | %s |'
                 % (mode, fmt(wa), fmt(f('write_amplification', m, 'rows')), fmt(f('write_amplification', m, 'compactions'), 0),
                    verdict(None if math.isnan(wa) else wa <= 4)))
        # disk: at its largest (before the VACUUM after a compaction) within
        # 1.15x the archive's rows repacked plus one batch, at every step
        disk = []
        ok_d = None
        for r in sorted((r for r in cycle if r['layout'] == m and r.get('archive_pages')), key=lambda r: int(r['step_rows'])):
            rep = fnum(r['archive_repacked_pages'])
            batch = rep * fnum(r['batch_rows']) / fnum(r['archive_rows'])
            peak = fnum(r['archive_pages_peak'])
            ok_d = (ok_d is not False) and peak <= 1.15 * rep + batch
            disk.append('%s: %sx / %sx (bound %sx)' % (r['table_rows'], fmt(ratio(peak, rep)),
                                                       fmt(ratio(fnum(r['archive_pages']), rep)),
                                                       fmt(ratio(1.15 * rep + batch, rep))))
        if disk:
            L.append('| 2d | %s | the archive\'s size at its largest (a compaction\'s rows written, its deleted rows not yet vacuumed) <= 1.15x its rows repacked plus one batch, at every step | '
                     'rows: largest / after VACUUM over repacked: %s | %s |' % (mode, '; '.join(disk), verdict(ok_d)))
        pc = f('p99_inserts', m + '_compaction', 'p99_ratio')
        if frow('p99_inserts', m + '_compaction', 'p99_ratio'):
            # variants (--compaction-p99-settings), view mode only: each after
            # a forced run, so each compacts about one batch
            cdesc = ''
            if m == 'ext':
                cdesc = ''.join('; with %s: %s ms during a %s-s compaction (%s rows) vs %s ms: %sx'
                                % (csettings[v], fmt(f('p99_inserts', v, 'p99_during_run_ms')),
                                   fmt(f('p99_inserts', v, 'run_seconds'), 1), fmt(f('p99_inserts', v, 'run_rows'), 0),
                                   fmt(f('p99_inserts', v, 'p99_without_run_ms')), fmt(f('p99_inserts', v, 'p99_ratio')))
                                for v in cvariants)
            L.append('| 5c | %s | p99 of concurrent inserts during a compaction <= 2x without (verdict: default settings) | %s ms during a %s-s compaction (%s rows) vs %s ms without: **%sx**%s | %s |'
                     % (mode, fmt(f('p99_inserts', m + '_compaction', 'p99_during_run_ms')),
                        fmt(f('p99_inserts', m + '_compaction', 'run_seconds'), 1),
                        fmt(f('p99_inserts', m + '_compaction', 'run_rows'), 0),
                        fmt(f('p99_inserts', m + '_compaction', 'p99_without_run_ms')), fmt(pc), cdesc,
                        verdict(None if math.isnan(pc) else pc <= 2)))

    # 3: OLTP only, one server, alternating rounds
    for m, mode, sfx in MODES:
        thr = 0.9 if m == 'ext' else 0.95
        r = ratio(f('oltp_same_server', m, 'tps_median'), f('oltp_same_server', 'plain', 'tps_median'))
        r_sep = ratio(f('oltp', m, 'tps'), f('oltp', 'plain', 'tps'))
        row = frow('oltp_same_server', m, 'tps_median')
        if not row and not frow('oltp', m, 'tps'):
            L.append('| 3 | %s | OLTP only (insert, update, select one): >= %sx plain table | not measured | n/a |' % (mode, thr))
            continue
        extra = ' (SQL design: %s tps)' % fmt(f('oltp', 'sql', 'tps'), 1) if m == 'ext' else ''
        L.append('| 3 | %s | OLTP only (insert, update, select one): %s >= %sx plain table (verdict: one server, alternating rounds) | '
                 'one server, %s rows each, median of 5 rounds: %s tps vs %s tps: **%sx**; at the final size on separate servers: %s vs %s tps: %sx%s | %s |'
                 % (mode, 'view' if m == 'ext' else 'table mode', thr, row['table_rows'] if row else 'n/a',
                    fmt(f('oltp_same_server', m, 'tps_median'), 1), fmt(f('oltp_same_server', 'plain', 'tps_median'), 1), fmt(r),
                    fmt(f('oltp', m, 'tps'), 1), fmt(f('oltp', 'plain', 'tps'), 1), fmt(r_sep), extra,
                    verdict(None if math.isnan(r) else r >= thr)))

    # 4: a run against the SQL statement on the same rows (layout ext's
    # figures: sql_statement, archive_cluster_run, at_*_step; tab's: *_tab)
    for m, mode, sfx in MODES:
        def rv(layout, metric):
            return [x for x in foc if x['benchmark'] == 'run_vs_sql' and x['layout'] == layout and x['metric'] == metric]
        speed = [x for x in foc if x['benchmark'] == 'run_vs_sql' and x['metric'] == 'speedup'
                 and x['layout'] in ('at_first_step' + sfx, 'at_final_step' + sfx)]
        ext_s, sql_s = rv('archive_cluster_run' + sfx, 'seconds'), rv('sql_statement' + sfx, 'seconds')
        ext_n = rv('archive_cluster_run' + sfx, 'rows')
        ext_p = {x['table_rows']: x['value'] for x in rv('archive_cluster_run' + sfx, 'paced_seconds')}
        # table mode: the same statement with t_archive's row triggers firing
        trg = {x['table_rows']: x['value'] for x in rv('sql_statement_triggers' + sfx, 'seconds')}

        def with_triggers(rows, run_s):
            if rows not in trg:
                return ''
            return ' (the statement with the archive\'s triggers firing: %s s, %sx)' % (trg[rows], fmt(ratio(fnum(trg[rows]), fnum(run_s))))
        if speed:
            desc = '; '.join('at %s rows: %s rows in %s s (%s s paced) vs %s s: **%sx**%s'
                             % (s['table_rows'], n['value'], e['value'], ext_p.get(s['table_rows'], 'n/a'), q['value'], s['value'],
                                with_triggers(s['table_rows'], e['value']))
                             for s, e, q, n in zip(speed, ext_s, sql_s, ext_n))
            flat = ratio(fnum(ext_s[-1]['value']), fnum(ext_s[0]['value'])) if len(ext_s) > 1 else float('nan')
            ok = all(fnum(s['value']) >= 1.5 for s in speed) and (math.isnan(flat) or flat <= 1.25)
            stmt = 'the SQL statement' if m == 'ext' else 'the SQL statement (without the archive\'s triggers, as in view mode)'
            L.append('| 4 | %s | a ~550k-row run >= 1.5x faster than %s; at the end within 1.25x of at ~1.1M rows | %s; end/start run time: **%sx** | %s |'
                     % (mode, stmt, desc, fmt(flat), verdict(ok)))
        else:
            L.append('| 4 | %s | run vs SQL statement | not measured | n/a |' % mode)

    # 5: p99 of concurrent inserts during a run
    settings, variants = p99_variants(res, 'p99_settings.csv')
    for m, mode, sfx in MODES:
        r = f('p99_inserts', m, 'p99_ratio')
        if not frow('p99_inserts', m, 'p99_ratio'):
            L.append('| 5 | %s | p99 of concurrent inserts during a run <= 2x without | not measured | n/a |' % mode)
            continue
        vdesc = ''
        if m == 'ext':
            vdesc = ''.join('; with %s: %s ms during a %s-s run vs %s ms: %sx'
                            % (settings[v], fmt(f('p99_inserts', v, 'p99_during_run_ms')),
                               fmt(f('p99_inserts', v, 'run_seconds'), 1), fmt(f('p99_inserts', v, 'p99_without_run_ms')),
                               fmt(f('p99_inserts', v, 'p99_ratio'))) for v in variants)
        L.append('| 5 | %s | p99 of concurrent inserts during a run <= 2x without (verdict: default settings) | %s ms during a %s-s run (%s inserts) vs %s ms without: **%sx**%s (SQL design: %sx) | %s |'
                 % (mode, fmt(f('p99_inserts', m, 'p99_during_run_ms')), fmt(f('p99_inserts', m, 'run_seconds'), 1),
                    fmt(f('p99_inserts', m, 'inserts_during_run'), 0), fmt(f('p99_inserts', m, 'p99_without_run_ms')), fmt(r),
                    vdesc, fmt(f('p99_inserts', 'sql', 'p99_ratio')), verdict(None if math.isnan(r) else r <= 2)))

    # 6: COPY FROM, one server, alternating rounds
    for m, mode, sfx in MODES:
        thr = 0.7 if m == 'ext' else 0.95
        r = ratio(f('copy', m, 'rows_per_s'), f('copy', 'plain', 'rows_per_s'))
        what = 'through the view' if m == 'ext' else 'into the table in table mode'
        if not frow('copy', m, 'rows_per_s'):
            L.append('| 6 | %s | COPY FROM %s >= %sx into the plain table | not measured | n/a |' % (mode, what, thr))
            continue
        cpu = ''
        if frow('copy', m, 'cpu_seconds_median'):
            # CPU time: plain's seconds over this one's (higher is better, as rows/s)
            cpu = '; backend CPU %s s vs %s s: %sx' % (
                fmt(f('copy', m, 'cpu_seconds_median')), fmt(f('copy', 'plain', 'cpu_seconds_median')),
                fmt(ratio(f('copy', 'plain', 'cpu_seconds_median'), f('copy', m, 'cpu_seconds_median'))))
        L.append('| 6 | %s | COPY FROM %s >= %sx into the plain table | %s rows/s vs %s rows/s: **%sx**%s (PL/pgSQL view: %sx) | %s |'
                 % (mode, what, thr, fmt(f('copy', m, 'rows_per_s'), 0), fmt(f('copy', 'plain', 'rows_per_s'), 0), fmt(r),
                    cpu, fmt(ratio(f('copy', 'sql', 'rows_per_s'), f('copy', 'plain', 'rows_per_s'))),
                    verdict(None if math.isnan(r) else r >= thr)))

    # 7: the fragmentation function (view mode: every layout but tab, as
    # before table mode was measured; table mode: tab)
    for m, mode, sfx in MODES:
        fr = [x for x in foc if x['benchmark'] == 'fragmentation' and (x['layout'] == 'tab') == (m == 'tab')]
        if fr and all(x['value'] != 'not_available' for x in fr):
            worst = max(fnum(x['value']) for x in fr)
            desc = '; '.join('%s, %s rows, %s: %s s' % (x['layout'], x['table_rows'], x['metric'].replace('seconds_', '').replace('_', ' '), x['value']) for x in fr)
            L.append('| 7 | %s | archive_cluster_fragmentation(), 200 sampled keys: < 1 s | %s | %s |' % (mode, desc, verdict(worst < 1)))
        else:
            L.append('| 7 | %s | archive_cluster_fragmentation(), 200 sampled keys: < 1 s | not available | n/a |' % mode)
    L.append('')

    # per-step table
    L.append('## Mixed workload per step')
    L.append('')
    L.append('| layout | rows | grown in (s) | tps | insert avg/p99 (ms) | update | select one | select hour | select all | buffers per select all | db size (MiB) | current rows |')
    L.append('|---|---|---|---|---|---|---|---|---|---|---|---|')
    for l in LAYOUTS:
        for s in sorted((r for r in steps if r['layout'] == l), key=lambda r: int(r['step_rows'])):
            cells = []
            for typ in TYPES:
                m = [r for r in lat if r['layout'] == l and r['workload'] == 'mixed' and r['step_rows'] == s['step_rows'] and r['type'] == typ]
                cells.append('%s / %s' % (fmt(fnum(m[0]['avg_ms'])), fmt(fnum(m[0]['p99_ms']))) if m else 'n/a')
            L.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
                l, s['step_rows'], s['grow_seconds'], fmt(fnum(s['tps']), 1), ' | '.join(cells),
                fmt(fnum(s['select_all_buffers']), 1), fmt(fnum(s['db_bytes']) / 2 ** 20, 0), s['current_rows']))
    L.append('')

    if cycle:
        L.append('## "select all" buffers over a cycle, per step')
        L.append('')
        L.append('A full tail just before a run, right after the run (`t_current` vacuumed), right after the compaction '
                 'that follows it (the archive vacuumed), and the same rows rewritten in (cid, ts) order.')
        L.append('')
        L.append('| layout | rows | before the run | after the run | after the compaction | repacked | after compaction / repacked | cycle mean / repacked | last batch (rows) | archive pages: largest / after VACUUM / its rows repacked |')
        L.append('|---|---|---|---|---|---|---|---|---|---|')
        for r in sorted(cycle, key=lambda r: (r['layout'], int(r['step_rows']))):
            rp = fnum(r['repacked'])
            L.append('| %s | %s | %s | %s | %s | %s | %sx | %sx | %s | %s / %s / %s |' % (
                r['layout'], r['table_rows'], r['before_run'], r['after_run'], r['after_compaction'], r['repacked'],
                fmt(ratio(fnum(r['after_compaction']), rp)),
                fmt(ratio((fnum(r['after_compaction']) + fnum(r['before_run'])) / 2, rp)),
                r.get('batch_rows') or 'n/a', r.get('archive_pages_peak') or 'n/a',
                r.get('archive_pages') or 'n/a', r.get('archive_repacked_pages') or 'n/a'))
        L.append('')

    split = load(os.path.join(res, 'split.csv')) if os.path.exists(os.path.join(res, 'split.csv')) else []
    if split:
        L.append('## Where "select all" reads, per table')
        L.append('')
        L.append('Per table of the plan, averaged over the same customers: the buffers of its scan node (index '
                 'and heap) and the heap pages holding the customer\'s rows there; index = buffers - heap pages.')
        L.append('')
        L.append('| layout | step | point | table | buffers | heap pages | index |')
        L.append('|---|---|---|---|---|---|---|')
        order = {'before_run': 0, 'after_compaction': 1, 'repacked': 2}
        for r in sorted(split, key=lambda r: (r['layout'], int(r['step_rows']), order.get(r['point'], 3), r['relation'])):
            L.append('| %s | %s | %s | %s | %s | %s | %s |' % (
                r['layout'], r['step_rows'], r['point'].replace('_', ' '), r['relation'], r['buffers'],
                r['heap_pages'], fmt(fnum(r['buffers']) - fnum(r['heap_pages']), 1)))
        L.append('')

    L.append('## OLTP only (insert, update, select one, 1:1:1; 10 clients)')
    L.append('')
    L.append('| layout | rows | tps | insert avg/p99 (ms) | update | select one |')
    L.append('|---|---|---|---|---|---|')
    for l in LAYOUTS:
        o = frow('oltp', l, 'tps')
        if not o:
            continue
        cells = []
        for typ in TYPES[:3]:
            m = [r for r in lat if r['layout'] == l and r['workload'] == 'oltp' and r['type'] == typ]
            cells.append('%s / %s' % (fmt(fnum(m[0]['avg_ms'])), fmt(fnum(m[0]['p99_ms']))) if m else 'n/a')
        L.append('| %s | %s | %s | %s |' % (l, o['table_rows'], fmt(fnum(o['value']), 1), ' | '.join(cells)))
    L.append('')

    if runs:
        L.append('## Archive runs during growth')
        L.append('')
        L.append('| layout | runs | rows moved (avg) | seconds (min / avg / max) | ms per 1,000 rows (first / last) |')
        L.append('|---|---|---|---|---|')
        for l in ('sql', 'ext', 'tab'):
            rr = sorted((r for r in runs if r['layout'] == l), key=lambda r: int(r['run_no']))
            if not rr:
                continue
            secs = [fnum(r['seconds']) for r in rr]
            per = [fnum(r['seconds']) / fnum(r['rows_moved']) * 1e6 for r in rr if fnum(r['rows_moved']) > 0]
            L.append('| %s | %d | %.0f | %.2f / %.2f / %.2f | %.2f / %.2f |' % (
                l, len(rr), sum(fnum(r['rows_moved']) for r in rr) / len(rr), min(secs), sum(secs) / len(secs), max(secs),
                per[0] if per else float('nan'), per[-1] if per else float('nan')))
        L.append('')

    waits = []
    for l in ['sql'] + variants + ['ext', 'tab']:
        w = load(os.path.join(res, 'p99_waits_%s.csv' % l))
        if w:
            tot = sum(int(x['samples']) for x in w)
            waits.append('| %s | %d | %s |' % (l, tot, '; '.join('%s %d%%' % (x['wait_event'], round(100.0 * int(x['samples']) / tot))
                                                                   for x in w[:6])))
    if waits:
        L.append('## What concurrent inserts wait for during a run (pg_stat_activity, 50-ms samples)')
        L.append('')
        L.append('| layout | samples | wait events (share of samples) |')
        L.append('|---|---|---|')
        L.extend(waits)
        L.append('')

    L.append('## Focused benchmarks (all values)')
    L.append('')
    L.append('| benchmark | layout | table rows | metric | value |')
    L.append('|---|---|---|---|---|')
    for x in foc:
        L.append('| %s | %s | %s | %s | %s %s |' % (x['benchmark'], x['layout'], x['table_rows'], x['metric'], x['value'], x['unit']))
    L.append('')
    if made:
        L.append('## Plots')
        L.append('')
        for m in made:
            L.append('![%s](%s)' % (m, m))
        L.append('')
    with open(os.path.join(res, 'summary.md'), 'w') as fh:
        fh.write('\n'.join(L))


if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 1 else ''
    if cmd == 'lat':
        cmd_lat(*sys.argv[2:7])
    elif cmd == 'p99window':
        cmd_p99window(*sys.argv[2:8])
    elif cmd == 'report':
        cmd_report(sys.argv[2])
    else:
        print(__doc__)
        sys.exit(2)
