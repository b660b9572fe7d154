/**
 * The reflector's backoff (client-go: wait.NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)
 * in reflector.go): exponential with full jitter, reset once no backoff was needed for a healthy
 * period. 800 ms doubling to 30 s is what client-go chose "to achieve ~98% traffic reduction when
 * the API server is not healthy".
 */
import type { Clock } from '../clock/clock.ts';

export interface Backoff {
  /** The next delay in milliseconds (each call counts as one backoff). */
  next(): number;
}

export interface BackoffOptions {
  readonly initialMs?: number;
  readonly maxMs?: number;
  /** With no backoff for this long, the next one starts again from initialMs. */
  readonly resetAfterMs?: number;
  readonly factor?: number;
  /** Each delay d becomes d + random() * jitter * d. */
  readonly jitter?: number;
  readonly clock: Clock;
  readonly random?: () => number;
}

export function newExponentialBackoff(options: BackoffOptions): Backoff {
  const initial = options.initialMs ?? 800;
  const max = options.maxMs ?? 30_000;
  const resetAfter = options.resetAfterMs ?? 120_000;
  const factor = options.factor ?? 2;
  const jitter = options.jitter ?? 1;
  const random = options.random ?? Math.random;
  let duration = initial;
  let lastStart = Number.NEGATIVE_INFINITY;
  return {
    next() {
      const now = options.clock.now();
      if (now - lastStart > resetAfter) duration = initial;
      lastStart = now;
      const base = duration;
      duration = Math.min(duration * factor, max);
      return base + random() * jitter * base;
    },
  };
}
