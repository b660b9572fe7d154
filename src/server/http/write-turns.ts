/**
 * The event loop's time that the writers of large cached bodies (LISTs) share. In each turn of
 * the loop they copy for at most WRITE_SHARE_MS all together, then wait for the next turn, whose
 * poll phase reads the upstream watches first. A budget per writer would not do: eight writers
 * resumed in one poll phase (their connections drained at once) each took their 2 ms in a row,
 * and an upstream event waited behind all of them (#15's apply latency at 100k objects).
 *
 * Invariant: between two poll phases the writers hold the loop for at most about
 * WRITE_SHARE_MS plus one writer's check interval; the first writer of a turn always makes
 * progress, so no body waits for ever, and writers that yield queue behind each other (setImmediate
 * is first in, first out), so each gets its turn.
 */

/** The writers' share of one loop turn. */
const WRITE_SHARE_MS = 2;

/** The loop's time the writers of one proxy share (one per server: newProxyServer makes it). */
export interface WriteTurns {
  /**
   * Whether a writer may go on copying now. The first call of a turn opens its share; the share
   * closes at the turn's check phase (setImmediate), after which the next writer opens another.
   */
  mayWrite(): boolean;
  /** Resolves in the loop's next check phase, after the poll phase has read what arrived. */
  nextTurn(): Promise<void>;
}

export function newWriteTurns(): WriteTurns {
  /** When this turn's share began (performance.now()), or undefined when no writer has run in it. */
  let shareStartedAt: number | undefined;
  const closeShare = (): void => {
    shareStartedAt = undefined;
  };
  return {
    mayWrite() {
      const now = performance.now();
      if (shareStartedAt === undefined) {
        shareStartedAt = now;
        setImmediate(closeShare);
        return true;
      }
      return now - shareStartedAt < WRITE_SHARE_MS;
    },
    nextTurn() {
      return new Promise((resolve) => setImmediate(resolve));
    },
  };
}
