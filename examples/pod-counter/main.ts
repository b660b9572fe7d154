/**
 * The pod counter as a process: `node examples/pod-counter/main.ts`, configured by environment
 * variables (deploy/example-controller/ sets them), talking to the apiserver through the
 * kubeconfig that $KUBECONFIG names: in a pod, the one the kube-cache-proxy sidecar writes.
 *
 * Replicas elect a leader on the Lease `pod-counter` in $POD_NAMESPACE; every replica keeps its
 * informers synced, only the leader reconciles. Log lines are JSON, one per line, on stdout.
 *
 * Stopping (SIGTERM, SIGINT): the workers finish the reconcile in progress and stop, then the
 * Lease is released (another replica takes over at its next attempt, not a lease duration
 * later), then the informers stop; exit 0. Leadership lost otherwise (renewals failed for the
 * renew deadline): the workers stop and the process exits 1, so that it restarts as a follower
 * (client-go's controllers exit on "leaderelection lost" too).
 */
import { hostname } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { newSharedInformerFactory } from 'kube-cache-proxy/informer';
import { newLeaderElector, newLeaseLock } from 'kube-cache-proxy/leaderelection';
import type { Log } from './controller.ts';
import { clientNodeWriter, newPodCounter } from './controller.ts';

/** A whole number of seconds from the environment, or the default. */
function seconds(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0)
    throw new Error(`${name} must be a positive whole number of seconds, not ${JSON.stringify(value)}`);
  return parsed;
}

const identity = process.env.POD_NAME ?? `${hostname()}_${String(process.pid)}`;
const namespace = process.env.POD_NAMESPACE;
if (namespace === undefined || namespace === '') throw new Error('POD_NAMESPACE must name the namespace of the Lease');
const namespaces = (process.env.NAMESPACES ?? namespace)
  .split(',')
  .map((n) => n.trim())
  .filter((n) => n !== '');
const configMapName = process.env.CONFIGMAP_NAME ?? 'pod-counts';

const log: Log = (message, fields = {}) => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), identity, msg: message, ...fields })}\n`);
};

const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();
const factory = newSharedInformerFactory({
  kubeConfig,
  resyncPeriodMs: seconds('RESYNC_SECONDS', 300) * 1000,
  log: (level, message) => {
    if (level !== 'debug') log(message, { level });
  },
});
const counter = newPodCounter({ factory, writer: clientNodeWriter(kubeConfig), namespaces, configMapName, identity, log });
const lock = newLeaseLock({ kubeConfig, namespace, name: 'pod-counter', identity });

/** Aborted by SIGTERM or SIGINT: stop reconciling, then release the Lease. */
const shutdown = new AbortController();
/** Aborted once the workers have drained: the elector may release the Lease only then. */
const stopElecting = new AbortController();
let working: Promise<void> = Promise.resolve();
const onSignal = (signal: NodeJS.Signals): void => {
  if (shutdown.signal.aborted) return;
  log('stopping', { signal });
  shutdown.abort();
  // client-go's warning for ReleaseOnCancel: the guarded work must have stopped before the
  // lease is released, or two replicas may reconcile at once.
  void working.finally(() => {
    stopElecting.abort();
  });
};
process.on('SIGTERM', onSignal);
process.on('SIGINT', onSignal);

const elector = newLeaderElector({
  lock,
  leaseDurationMs: seconds('LEASE_DURATION_SECONDS', 15) * 1000,
  renewDeadlineMs: seconds('RENEW_DEADLINE_SECONDS', 10) * 1000,
  retryPeriodMs: seconds('RETRY_PERIOD_SECONDS', 2) * 1000,
  releaseOnCancel: true,
  callbacks: {
    onStartedLeading: (leading) => {
      log('started leading');
      // Stopping already (the Lease was won while the signal came): reconcile nothing, release.
      if (shutdown.signal.aborted) return;
      working = counter.runWorkers(AbortSignal.any([leading, shutdown.signal]));
    },
    onStoppedLeading: () => {
      log('stopped leading');
    },
    onNewLeader: (leader) => {
      log('new leader', { leader });
    },
  },
  log: (level, message) => {
    if (level !== 'debug') log(message, { level });
  },
});

factory.start();
let synced = true;
try {
  await factory.waitForCacheSync(shutdown.signal);
  log('caches synced', { namespaces });
} catch {
  synced = false; // stopped before the caches synced
}
if (synced && !shutdown.signal.aborted) await elector.run(stopElecting.signal);
const lost = !shutdown.signal.aborted;
if (lost) log('leader election lost');
await working;
await factory.shutdown();
await lock.close();
log('stopped');
process.exitCode = lost ? 1 : 0;
