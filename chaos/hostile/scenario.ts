/**
 * The hostile-client suite's phases, shared by the full run (run.ts) and its short scenario in
 * `npm test` (test/e2e/chaos/hostile.test.ts): a baseline phase without attack, then each attack
 * in turn, each phase on a fresh proxy process (an attack's harm may outlive it: a poisoned
 * read-your-writes mark lasts until restart, a cache of decisions for minutes), while the good
 * clients watch and read throughout, riding each restart as they would a rollout.
 *
 * A phase: a fresh proxy; the good clients back at work (every watcher watching, every client's
 * latest read a success) and `warmupMs` more; then, for `beforeMs`, the writers without the
 * attack (the same proxy's reads just before the attack: what its p99 is judged against, so that
 * the shared machine's drift over a run of many phases is not counted as the attack's harm);
 * then, for `phaseMs`, the attack and the writers,
 * the proxy's RSS sampled; then the hold, `holdMs`: the attack sends nothing more but keeps what
 * it opened (watches), and the least RSS of the hold is what the proxy held for it; then the
 * attack lets go, the proxy's /metrics is read (its event-loop delay histogram, reset by the read
 * before the phase, covers exactly the phase), and the good clients' reads and watches (over the
 * attack and the hold) are audited.
 */
import { getPriority } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { metricSum, metricSumWhere } from '../../test/helpers/metrics-text.ts';
import type { Attack, AttackEnv, AttackOutcome, PreparedAttack } from './attacks.ts';
import type { GoodClients, PhaseReport } from './good-clients.ts';
import type { HostileProxy, ProxyExit } from './hostile-proxy.ts';
import { reniceProcess } from './niceness.ts';

/** The acceptance bounds of the suite (issue: "Each attack of the suite"). */
export const BOUNDS = {
  /**
   * The proxy's RSS may grow this much over its phase start, as held in the hold after the
   * attack (its peak, with the attack's garbage not yet collected, is printed, not judged), beyond
   * what the baseline's held (a fresh proxy's heap still grows to its steady size in a phase).
   */
  rssGrowthBytes: 16 * 2 ** 20,
  /** The event loop's longest delay in the phase (prom-client's 10 ms sampling included). */
  loopDelayMaxMs: 100,
  /** The good clients' read p99 may be this many times the same proxy's just before the attack (or the baseline phase's). */
  p99Factor: 2,
  /**
   * The good clients' share of reads from the cache may be this much (absolute) below the
   * baseline's: a read or two of a phase passed through for a reason of its own is no harm.
   */
  cacheShareSlack: 0.01,
} as const;

/** The verbs of reads, on the types the good clients read (nothing an attack sends). */
const READ_VERBS = new Set(['get', 'list', 'watch']);
const GOOD_TYPES = new Set(['pods', 'configmaps']);
const REQUESTS = 'kube_cache_proxy_requests_total';
/** The proxy's own failures: a read the cache failed to serve (a bug) and listener or observer faults. */
const PASS_THROUGH = 'kube_cache_proxy_pass_through_total';
const FAULTS = 'kube_cache_proxy_faults_total';
/** Good clients back at work after a restart (their backoff started over: GoodClients.wake). */
const SETTLE_MS = 60_000;
const RSS_SAMPLE_MS = 200;
/** How long a frozen proxy is waited for after its phase (a ~1 MB Accept header held one for minutes on 2 cores). */
const SCRAPE_MS = 600_000;

export interface PhaseRow {
  /** 'baseline', or the attack's name. */
  readonly phase: string;
  readonly what: string;
  /** Why the phase did not run (never counted as passed). */
  readonly skipped?: string;
  readonly outcome?: AttackOutcome;
  /** Bytes: at the phase start, and the most over it (the attack's garbage included). */
  readonly rssStart: number;
  readonly rssPeak: number;
  /** Bytes: the least over the hold (what the proxy still held once the attack stopped sending). */
  readonly rssHeld: number;
  readonly loopP99Ms: number;
  readonly loopMaxMs: number;
  readonly good?: PhaseReport;
  /** The good clients on the same proxy just before the attack, without it (when measured: beforeMs > 0). */
  readonly before?: PhaseReport;
  /** Of the good types' reads the proxy counted in the phase, the share it served from its cache (0..1); NaN without reads. */
  readonly cacheShare: number;
  /** Reads the cache failed to serve (reason cache-error) and faults counted in the phase. */
  readonly internalErrors: number;
  /** Warnings and errors the proxy logged in the phase. */
  readonly warnings: readonly string[];
  /** How the proxy ended, when it did during the phase. */
  readonly exit?: ProxyExit;
  /** Broken bounds of the attack's own (its check). */
  readonly checks: readonly string[];
}

export interface ScenarioSpec {
  readonly proxy: HostileProxy;
  readonly good: GoodClients;
  readonly env: AttackEnv;
  readonly attacks: readonly Attack[];
  readonly phaseMs: number;
  /** How long the attack holds what it opened, sending nothing, after its phase (the held RSS is read then), ms. */
  readonly holdMs: number;
  readonly warmupMs: number;
  /** How long the good clients are measured on the phase's proxy without the attack before it starts, ms; 0: not (judged against the baseline phase). */
  readonly beforeMs: number;
  readonly log: (line: string) => void;
  /** Told each row as its phase ends (a test asserts there, and stops the run at the first broken bound). */
  readonly onRow?: (row: PhaseRow) => void;
}

interface Counters {
  readonly cache: number;
  readonly apiserver: number;
  readonly internal: number;
}

function counters(text: string | undefined): Counters | undefined {
  if (text === undefined) return undefined;
  const reads = (from: string): number =>
    metricSumWhere(
      text,
      REQUESTS,
      (l) => l['served_from'] === from && READ_VERBS.has(l['verb'] ?? '') && GOOD_TYPES.has(l['resource'] ?? ''),
    );
  const internal = metricSum(text, PASS_THROUGH, { reason: 'cache-error' }) + metricSum(text, FAULTS);
  return { cache: reads('cache'), apiserver: reads('apiserver'), internal };
}

function gauge(text: string | undefined, name: string): number {
  if (text === undefined) return NaN;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/**
 * The proxy's /metrics once it answers again: a loop frozen past Node's headersTimeout (60 s)
 * resets the connections that waited, the scrape's among them, so it is asked again until
 * SCRAPE_MS has passed or the process is gone. The loop-delay histogram is reset only by an
 * answered scrape, so the one that answers covers the whole phase.
 */
async function metricsOnceAnswering(proxy: HostileProxy): Promise<string | undefined> {
  const deadline = performance.now() + SCRAPE_MS;
  for (;;) {
    const text = await proxy.metrics();
    if (text !== undefined || proxy.current()?.exit() !== undefined || performance.now() > deadline) return text;
    await sleep(1000);
  }
}

/** Starts a fresh proxy process (stopping the previous one) and waits until the good clients are back at work. */
async function freshProxy(spec: ScenarioSpec): Promise<void> {
  await spec.proxy.current()?.stop();
  const { pid } = await spec.proxy.start();
  // The restart is the harness's, not what a phase measures: the watchers' backoff, grown by the
  // restarts before, would keep them waiting up to a minute.
  await spec.good.wake();
  const niceness = getPriority(pid);
  if (niceness !== spec.proxy.niceness)
    spec.log(
      `  the proxy runs at nice ${String(niceness)}, not ${String(spec.proxy.niceness)} (lowering it needs root): it competes with the attacks`,
    );
  const deadline = performance.now() + SETTLE_MS;
  for (;;) {
    const status = await spec.good.status();
    if (status.watching === status.clients && status.readingOk === status.clients) break;
    if (performance.now() > deadline)
      throw new Error(
        `the good clients were not back at work ${String(SETTLE_MS / 1000)} s after the proxy started: ${String(status.watching)}/${String(status.clients)} watching, ${String(status.readingOk)} reading`,
      );
    await sleep(100);
  }
  // The warm-up is a length of the run (connections made, decisions cached), not a wait for an event.
  await sleep(spec.warmupMs);
}

async function runPhase(spec: ScenarioSpec, name: string, what: string, prepared: PreparedAttack | undefined): Promise<PhaseRow> {
  const { proxy, good, log } = spec;
  await freshProxy(spec);
  const running = proxy.current();
  let before: PhaseReport | undefined;
  if (spec.beforeMs > 0) {
    await good.startPhase();
    await sleep(spec.beforeMs);
    before = await good.endPhase();
    log(
      `  ${name}: before it, good reads ${String(before.reads)} (${String(before.failed)} failed) p99 ${before.p99Ms.toFixed(0)} ms (p50 ${before.p50Ms.toFixed(1)}), ${String(before.lost)} events lost`,
    );
  }
  const countsBefore = counters(await proxy.metrics());
  const rssStart = proxy.rss();
  let rssPeak = rssStart;
  /** The least RSS seen in the hold (Infinity before it): what the attack made the proxy hold. */
  let rssHeld = Infinity;
  let holding = false;
  const sampler = setInterval(() => {
    const rss = proxy.rss();
    if (!Number.isFinite(rss)) return;
    rssPeak = Math.max(rssPeak, rss);
    if (holding) rssHeld = Math.min(rssHeld, rss);
  }, RSS_SAMPLE_MS);
  const mark = proxy.logMark();
  const ticker = setInterval(() => {
    log(
      `  ${name}${holding ? ' (hold)' : ''}: RSS ${(proxy.rss() / 2 ** 20).toFixed(0)} MiB (peak ${(rssPeak / 2 ** 20).toFixed(0)} MiB; anonymous ${(proxy.rss('RssAnon') / 2 ** 20).toFixed(1)}, file-backed ${(proxy.rss('RssFile') / 2 ** 20).toFixed(1)})`,
    );
  }, 10_000);
  try {
    await good.startPhase();
    const stop = new AbortController();
    const release = new AbortController();
    /** Why the attack itself failed (it did not run as meant: never a pass). */
    let attackFailure: string | undefined;
    const attacking = prepared?.run(stop.signal, release.signal).catch((error: unknown): AttackOutcome => {
      attackFailure = `the attack itself failed: ${error instanceof Error ? error.message : String(error)}`;
      return { sent: 0, answers: {}, effect: attackFailure };
    });
    await sleep(spec.phaseMs);
    stop.abort();
    // The hold: nothing new is sent, what the attack opened stays open, the good clients go on;
    // garbage of the attack is collected (V8's memory reducer runs after ~8 s of low allocation),
    // what the proxy still holds is the figure.
    holding = true;
    await sleep(spec.holdMs);
    holding = false;
    release.abort();
    const outcome = await attacking;
    const text = await metricsOnceAnswering(proxy);
    const countsAfter = counters(text);
    const exit = running?.exit();
    if (exit !== undefined) {
      log(
        `  ${name}: the proxy exited (${String(exit.code ?? exit.signal)}${exit.oomKills > 0 ? ', OOM-killed' : ''}); restarting it for the good clients to catch up`,
      );
      await proxy.start();
    }
    const report = await good.endPhase();
    const checks = [
      ...(attackFailure === undefined ? [] : [attackFailure]),
      ...(exit === undefined ? ((await prepared?.check?.(proxy)) ?? []) : []),
    ];
    const reads =
      countsBefore === undefined || countsAfter === undefined
        ? undefined
        : { cache: countsAfter.cache - countsBefore.cache, apiserver: countsAfter.apiserver - countsBefore.apiserver };
    return {
      phase: name,
      what,
      ...(outcome === undefined ? {} : { outcome }),
      rssStart,
      rssPeak,
      rssHeld: Number.isFinite(rssHeld) ? rssHeld : NaN,
      loopP99Ms: gauge(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
      loopMaxMs: gauge(text, 'nodejs_eventloop_lag_max_seconds') * 1000,
      good: report,
      ...(before === undefined ? {} : { before }),
      cacheShare: reads === undefined || reads.cache + reads.apiserver === 0 ? NaN : reads.cache / (reads.cache + reads.apiserver),
      internalErrors: countsBefore === undefined || countsAfter === undefined ? NaN : countsAfter.internal - countsBefore.internal,
      warnings: proxy.warningsSince(mark),
      ...(exit === undefined ? {} : { exit }),
      checks,
    };
  } finally {
    clearInterval(sampler);
    clearInterval(ticker);
  }
}

/**
 * The niceness the attacks are sent at (this process's, from runScenario on): an attacker's CPU is
 * not the proxy's (in a cluster it is another pod's, under its own limits), so on a shared 2-core
 * machine it must not take the proxy's; the good clients run at nice 10 (good-clients.ts), the
 * proxy at the niceness this process had before (hostile-proxy.ts).
 */
export const ATTACKER_NICENESS = 19;

/** Runs the baseline, then each attack; one row each. */
export async function runScenario(spec: ScenarioSpec): Promise<PhaseRow[]> {
  const rows: PhaseRow[] = [];
  const { log } = spec;
  // Raising one's own niceness needs no privilege. Every thread: the attacks' garbage is collected
  // on V8's threads, their TLS partly on the libuv pool's (niceness.ts).
  reniceProcess(process.pid, ATTACKER_NICENESS);
  log(`attacks sent at nice ${String(getPriority())}, the proxy at nice ${String(spec.proxy.niceness)}`);
  log('baseline: no attack');
  const baseline = await runPhase(spec, 'baseline', 'no attack', undefined);
  rows.push(baseline);
  log(summary(baseline));
  spec.onRow?.(baseline);
  for (const attack of spec.attacks) {
    log(`${attack.name}: ${attack.what}`);
    const prepared = await attack.prepare(spec.env);
    if (typeof prepared === 'string') {
      log(`${attack.name}: skipped: ${prepared}`);
      const row: PhaseRow = {
        phase: attack.name,
        what: attack.what,
        skipped: prepared,
        rssStart: NaN,
        rssPeak: NaN,
        rssHeld: NaN,
        loopP99Ms: NaN,
        loopMaxMs: NaN,
        cacheShare: NaN,
        internalErrors: NaN,
        warnings: [],
        checks: [],
      };
      rows.push(row);
      spec.onRow?.(row);
      continue;
    }
    try {
      const row = await runPhase(spec, attack.name, attack.what, prepared);
      rows.push(row);
      log(summary(row));
      spec.onRow?.(row);
    } finally {
      await prepared.close();
    }
  }
  return rows;
}

function summary(row: PhaseRow): string {
  const g = row.good;
  return `${row.phase}: RSS held +${((row.rssHeld - row.rssStart) / 2 ** 20).toFixed(1)} MiB (peak +${((row.rssPeak - row.rssStart) / 2 ** 20).toFixed(1)}), loop delay p99 ${row.loopP99Ms.toFixed(0)} ms max ${row.loopMaxMs.toFixed(0)} ms, good reads ${String(g?.reads ?? 0)} (${String(g?.failed ?? 0)} failed) p99 ${(g?.p99Ms ?? NaN).toFixed(0)} ms${row.before === undefined ? '' : ` against ${row.before.p99Ms.toFixed(0)} just before`} (p50 ${(g?.p50Ms ?? NaN).toFixed(1)}, their own loop delay p99 ${(g?.ownLoopP99Ms ?? NaN).toFixed(0)} max ${(g?.ownLoopMaxMs ?? NaN).toFixed(0)} ms), ${(row.cacheShare * 100).toFixed(1)}% from cache, ${String(g?.lost ?? 0)} events lost${row.outcome === undefined ? '' : `; attack: ${row.outcome.effect}`}`;
}

/**
 * The p99 an attack's is judged against: the same proxy's just before the attack when it was
 * measured, else the baseline phase's; none for the baseline itself (no attack to judge).
 */
export function p99Reference(row: PhaseRow, baseline: PhaseRow | undefined): { p99Ms: number; what: string } | undefined {
  if (row.phase === 'baseline') return undefined;
  if (row.before !== undefined) return { p99Ms: row.before.p99Ms, what: 'the same proxy’s just before the attack,' };
  return baseline?.good === undefined ? undefined : { p99Ms: baseline.good.p99Ms, what: 'the baseline’s' };
}

/** The bounds a row breaks (baseline: the absolute ones), each said in a line; [] when it keeps them all. */
export function brokenBounds(row: PhaseRow, baseline: PhaseRow | undefined): string[] {
  if (row.skipped !== undefined) return [];
  const out: string[] = [];
  const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(1);
  if (row.exit !== undefined)
    out.push(
      `the proxy exited (${String(row.exit.code ?? row.exit.signal)}${row.exit.oomKills > 0 ? ': OOM-killed in its memory cgroup' : ''})`,
    );
  // What the attack made the proxy hold: over what the same steps held without it (the
  // baseline's: a fresh proxy's heap still growing to its steady size), as p99 is compared.
  const growth = row.rssHeld - row.rssStart;
  const own = baseline !== undefined && baseline !== row ? Math.max(0, baseline.rssHeld - baseline.rssStart) : 0;
  if (!(growth - own <= BOUNDS.rssGrowthBytes))
    out.push(
      `RSS held ${mib(growth)} MiB more, ${mib(growth - own)} over the baseline's ${mib(own)} (bound ${mib(BOUNDS.rssGrowthBytes)}; peak +${mib(row.rssPeak - row.rssStart)})`,
    );
  if (!(row.loopMaxMs <= BOUNDS.loopDelayMaxMs))
    out.push(`event-loop delay max ${row.loopMaxMs.toFixed(0)} ms (bound ${String(BOUNDS.loopDelayMaxMs)})`);
  const good = row.good;
  if (good === undefined || good.reads === 0) out.push('the good clients read nothing');
  else if (row.before !== undefined && row.before.failed > 0) out.push(`${String(row.before.failed)} good reads failed before the attack`);
  else {
    if (good.failed > 0)
      out.push(
        `${String(good.failed)} good reads failed (${Object.entries(good.failures)
          .map(([k, v]) => `${k}×${String(v)}`)
          .join(', ')})`,
      );
    const reference = p99Reference(row, baseline);
    if (reference !== undefined && !(good.p99Ms <= BOUNDS.p99Factor * reference.p99Ms))
      out.push(
        `good read p99 ${good.p99Ms.toFixed(0)} ms, ${(good.p99Ms / reference.p99Ms).toFixed(1)}× ${reference.what} ${reference.p99Ms.toFixed(0)} ms (bound ${String(BOUNDS.p99Factor)}×)`,
      );
    for (const report of row.before === undefined ? [good] : [row.before, good]) {
      const lost = report.lost + report.duplicated + report.reordered;
      if (lost > 0)
        out.push(`${String(report.lost)} events lost, ${String(report.duplicated)} duplicated, ${String(report.reordered)} reordered`);
    }
  }
  const floor =
    baseline !== undefined && baseline !== row && Number.isFinite(baseline.cacheShare)
      ? baseline.cacheShare - BOUNDS.cacheShareSlack
      : undefined;
  if (floor !== undefined && !(row.cacheShare >= floor))
    out.push(
      `${(row.cacheShare * 100).toFixed(1)}% of the good reads from the cache (baseline ${((baseline?.cacheShare ?? NaN) * 100).toFixed(1)}%)`,
    );
  if (row.exit === undefined && !(row.internalErrors === 0))
    out.push(
      `${Number.isNaN(row.internalErrors) ? 'unknown' : String(row.internalErrors)} internal errors of the proxy (cache-error passes, faults)`,
    );
  out.push(...row.checks);
  return out;
}
