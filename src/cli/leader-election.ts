/**
 * `kube-cache-proxy leader-election --lease NAME --namespace NS [--identity ID] ...`
 *
 * Runs one candidate of a leader election on a coordination.k8s.io/v1 Lease, with client-go's
 * rules (src/leaderelection), and prints each transition on stdout, one line each, prefixed with
 * the time (ISO 8601, this machine's clock):
 *
 *   2026-11-22T20:00:00.123Z candidate ID for lease NS/NAME (pid 1234)
 *   2026-11-22T20:00:00.456Z new leader: ID2            ('(none)' once a leader released it)
 *   2026-11-22T20:00:02.001Z started leading
 *   2026-11-22T20:00:09.870Z stopped leading: REASON   (the moment this process stops acting as leader)
 *   2026-11-22T20:00:09.902Z election ended            (onStoppedLeading: after the release, if asked)
 *
 * "started leading" / "stopped leading" bracket exactly the time this process believes it leads
 * (onStartedLeading, and its AbortSignal firing), so a reader of several candidates' output can
 * tell at any moment who believes it leads. After losing the lease the candidate competes again;
 * on SIGTERM or SIGINT it stops (releasing the lease with --release-on-cancel) and exits 0.
 * Diagnostics go to stderr.
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  newLeaderElector,
  newLeaseLock,
  validateLeaderElectionTiming,
} from '../leaderelection/index.ts';
import type { LeaderElector } from '../leaderelection/index.ts';
import { newUpstreamClient } from '../upstream/client.ts';
import { loadUpstreamConfig } from '../upstream/config.ts';
import type { UpstreamConfig } from '../upstream/config.ts';
import { CliError } from '../proxy/cli-error.ts';
import { parseGoDurationMs } from '../kube/go-duration.ts';
import { takeBooleanValues } from './boolean-flags.ts';
import { isProcessAlive } from './dev-cluster/processes.ts';

export const LEADER_ELECTION_USAGE = `Usage: kube-cache-proxy leader-election --lease NAME --namespace NS [options]

Runs one candidate of a leader election on a coordination.k8s.io/v1 Lease (client-go's rules) and
prints each transition on stdout: "started leading", "stopped leading: REASON", "new leader: ID".

Options:
  --lease NAME               the Lease to compete for (required)
  --namespace NS             its namespace (required)
  --identity ID              this candidate's identity (default: ${hostname()}_<pid>)
  --kubeconfig FILE          default: $KUBECONFIG, then ~/.kube/config, then in-cluster
  --context NAME             a context of the kubeconfig (default: its current context)
  --lease-duration DURATION  how long others wait before taking over an unrenewed lease, whole seconds (default ${String(DEFAULT_LEASE_DURATION_MS / 1000)}s)
  --renew-deadline DURATION  how long the leader retries renewing before it stops leading (default ${String(DEFAULT_RENEW_DEADLINE_MS / 1000)}s)
  --retry-period DURATION    between attempts (default ${String(DEFAULT_RETRY_PERIOD_MS / 1000)}s)
                             (durations as Go writes them: 15s, 1m, 500ms)
  --release-on-cancel        on SIGTERM/SIGINT, release the lease so another candidate takes over at once
  --owner-pid PID            stop (as on SIGTERM) when process PID exits (test harnesses)`;

/** How often --owner-pid is checked. */
const OWNER_POLL_MS = 500;
/** resourcelock/interface.go NewFromKubeconfig: each request times out at max(1 s, renewDeadline / 2). */
const MIN_REQUEST_TIMEOUT_MS = 1_000;

export interface LeaderElectionArgs {
  readonly lease: string;
  readonly namespace: string;
  readonly identity: string;
  readonly kubeconfig: string | undefined;
  readonly context: string | undefined;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly releaseOnCancel: boolean;
  readonly ownerPid: number | undefined;
}

/** Parses the command's arguments; undefined for --help. Throws CliError for bad ones. */
export function parseLeaderElectionArgs(argv: readonly string[]): LeaderElectionArgs | undefined {
  const booleans = takeBooleanValues(argv, new Set(['release-on-cancel', 'help']));
  const { values, positionals } = parseArgs({
    args: booleans.args,
    allowPositionals: true,
    options: {
      lease: { type: 'string' },
      namespace: { type: 'string' },
      identity: { type: 'string' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      'lease-duration': { type: 'string' },
      'renew-deadline': { type: 'string' },
      'retry-period': { type: 'string' },
      'release-on-cancel': { type: 'boolean' },
      'owner-pid': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true && booleans.given.get('help')?.value !== false) return undefined;
  if (positionals.length > 0) throw new CliError(`unexpected arguments: ${positionals.join(' ')}`, LEADER_ELECTION_USAGE);
  if (values.lease === undefined || values.lease === '') throw new CliError('--lease is required', LEADER_ELECTION_USAGE);
  if (values.namespace === undefined || values.namespace === '') throw new CliError('--namespace is required', LEADER_ELECTION_USAGE);
  if (values.identity === '') throw new CliError('--identity must not be empty');
  let ownerPid: number | undefined;
  if (values['owner-pid'] !== undefined) {
    ownerPid = Number(values['owner-pid']);
    if (!Number.isInteger(ownerPid) || ownerPid <= 0) throw new CliError(`--owner-pid must be a process id, not ${values['owner-pid']}`);
  }
  const leaseDurationMs = duration('--lease-duration', values['lease-duration'], DEFAULT_LEASE_DURATION_MS);
  if (leaseDurationMs % 1000 !== 0)
    throw new CliError(
      `--lease-duration must be whole seconds (a Lease stores leaseDurationSeconds), not ${values['lease-duration'] ?? ''}`,
    );
  const renewDeadlineMs = duration('--renew-deadline', values['renew-deadline'], DEFAULT_RENEW_DEADLINE_MS);
  const retryPeriodMs = duration('--retry-period', values['retry-period'], DEFAULT_RETRY_PERIOD_MS);
  try {
    validateLeaderElectionTiming({ leaseDurationMs, renewDeadlineMs, retryPeriodMs });
  } catch (error) {
    throw new CliError(
      error instanceof Error ? error.message : String(error),
      'Give --lease-duration (whole seconds) > --renew-deadline > 1.2 × --retry-period, e.g. 15s, 10s and 2s.',
    );
  }
  return {
    lease: values.lease,
    namespace: values.namespace,
    identity: values.identity ?? `${hostname()}_${String(process.pid)}`,
    kubeconfig: values.kubeconfig,
    context: values.context,
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs,
    releaseOnCancel: booleans.given.get('release-on-cancel')?.value ?? false,
    ownerPid,
  };
}

/** A Go duration flag (time.ParseDuration) in milliseconds, > 0. */
function duration(flag: string, value: string | undefined, defaultMs: number): number {
  if (value === undefined) return defaultMs;
  const ms = parseGoDurationMs(value);
  if (ms === undefined || ms <= 0) throw new CliError(`${flag} must be a duration > 0 with a unit (e.g. 15s, 500ms), not ${value}`);
  return ms;
}

export async function leaderElectionCommand(argv: readonly string[]): Promise<number> {
  const args = parseLeaderElectionArgs(argv);
  if (args === undefined) {
    console.log(LEADER_ELECTION_USAGE);
    return 0;
  }
  let config: UpstreamConfig;
  try {
    config = await loadUpstreamConfig({ kubeconfig: args.kubeconfig, context: args.context });
  } catch (error) {
    throw new CliError(`cannot load the kubeconfig: ${error instanceof Error ? error.message : String(error)}`);
  }
  const client = newUpstreamClient(config);
  const say = (line: string): void => {
    // Writes to a pipe or file are synchronous on Linux: the line is out before we go on.
    process.stdout.write(`${new Date().toISOString()} ${line}\n`);
  };
  let elector: LeaderElector;
  try {
    elector = newLeaderElector({
      lock: newLeaseLock({
        client,
        namespace: args.namespace,
        name: args.lease,
        identity: args.identity,
        requestTimeoutMs: Math.max(MIN_REQUEST_TIMEOUT_MS, args.renewDeadlineMs / 2),
      }),
      name: args.lease,
      leaseDurationMs: args.leaseDurationMs,
      renewDeadlineMs: args.renewDeadlineMs,
      retryPeriodMs: args.retryPeriodMs,
      releaseOnCancel: args.releaseOnCancel,
      callbacks: {
        onStartedLeading(signal) {
          say('started leading');
          signal.addEventListener(
            'abort',
            () => {
              say(`stopped leading: ${signal.reason instanceof Error ? signal.reason.message : String(signal.reason)}`);
            },
            { once: true },
          );
        },
        onStoppedLeading() {
          say('election ended');
        },
        onNewLeader(identity) {
          say(`new leader: ${identity === '' ? '(none)' : identity}`);
        },
      },
      log: (level, message) => {
        if (level !== 'debug') process.stderr.write(`${new Date().toISOString()} ${level}: ${message}\n`);
      },
    });
  } catch (error) {
    await client.close();
    throw new CliError(error instanceof Error ? error.message : String(error));
  }

  const stop = new AbortController();
  const onSignal = (): void => {
    if (stop.signal.aborted) {
      // A second signal: do not wait for the release any longer.
      process.exit(1);
    }
    stop.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const ownerCheck =
    args.ownerPid === undefined
      ? undefined
      : setInterval(() => {
          if (args.ownerPid !== undefined && !isProcessAlive(args.ownerPid)) stop.abort();
        }, OWNER_POLL_MS);

  say(`candidate ${args.identity} for lease ${args.namespace}/${args.lease} (pid ${String(process.pid)})`);
  try {
    // After losing the lease, compete again: Run returns when leading ends (leaderelection.go).
    while (!stop.signal.aborted) await elector.run(stop.signal);
  } finally {
    if (ownerCheck !== undefined) clearInterval(ownerCheck);
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await client.close();
  }
  return 0;
}
