/** A delegator's metrics that record its freshness proofs' outcomes, for tests that wait for the next one. */
import type { DelegatorMetrics } from '../../src/cache/delegator.ts';
import type { ProofOutcome } from '../../src/cache/freshness-keeper.ts';
import { noopDelegatorMetrics } from '../../src/cache/delegator.ts';

export interface ProofOutcomes {
  /** Give to delegatorFactory's `metrics`. */
  readonly metrics: () => DelegatorMetrics;
  /** Every outcome so far, in order. */
  readonly outcomes: readonly ProofOutcome[];
  /** Resolves with the outcome of the next proof to end. */
  readonly next: () => Promise<ProofOutcome>;
}

export function recordProofOutcomes(): ProofOutcomes {
  const outcomes: ProofOutcome[] = [];
  let waiting: ((outcome: ProofOutcome) => void)[] = [];
  const metrics: DelegatorMetrics = {
    ...noopDelegatorMetrics,
    proof: (outcome) => {
      outcomes.push(outcome);
      const resolve = waiting;
      waiting = [];
      for (const r of resolve) r(outcome);
    },
  };
  return {
    metrics: () => metrics,
    outcomes,
    next: () =>
      new Promise((resolve) => {
        waiting.push(resolve);
      }),
  };
}
