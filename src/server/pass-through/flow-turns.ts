/**
 * Fair dispatch between flows, turn by turn of the event loop: APF's fair queuing
 * (k8s.io/apiserver pkg/util/flowcontrol/fairqueuing) where the proxy's seats are the loop's turns.
 *
 * A read the cache answers takes a millisecond or two of the loop, from its admission to its bytes
 * handed to the socket, and the loop takes requests in the order their connections became
 * readable: a client with two hundred requests in flight on two hundred connections had two
 * hundred of them served in the same turn as a well-behaved client's one, which waited behind all
 * of them (a LIST flood from one identity held the good clients' p99 at 0.5 s against 23 ms). The
 * per-flow limit on requests in flight (flow-limits.ts) does not see them: each is done before the
 * next is read, the queue is in the kernel's socket buffers.
 *
 * So each flow starts at most REQUESTS_PER_TURN requests in one turn of the loop; the next ones
 * wait for a later turn, where the waiting flows are served in turn, each again up to
 * REQUESTS_PER_TURN, in the loop's check phase, after the poll phase has read what every other
 * connection sent. A flow that sends a request now and then never waits; one with a backlog is
 * served as fast as the loop turns when nobody else needs it, and otherwise one share of each turn,
 * as every other flow.
 *
 * Invariant: a flow is in #ready exactly when it has waiters; waiters are resumed in their arrival
 * order (a flow's requests keep their order), and nothing waits once the loop has turned with room.
 * Cost: O(1) per request (a Map lookup); the turn's counts are one Map cleared once a turn.
 */
import type { FlowKey } from './flow-limits.ts';

/**
 * Requests one flow starts in one turn of the loop. kube-controller-manager starting 30 LISTs at
 * once starts them over eight turns (a few ms when the loop is idle); a flood of 200 at once
 * holds each turn for four requests' time (~5-10 ms), not 200's.
 */
export const REQUESTS_PER_TURN = 4;

export interface FlowTurns {
  /**
   * Undefined when `flow` may start a request now (within its share of this turn), else a promise
   * that resolves in a later turn, when its turn comes. Synchronous on purpose for the common
   * case: no promise is made for a request that need not wait.
   */
  enter(flow: FlowKey): Promise<void> | undefined;
  /** Requests waiting for a later turn now, over every flow. */
  waiting(): number;
}

export function newFlowTurns(perTurn: number = REQUESTS_PER_TURN): FlowTurns {
  return new Turns(perTurn);
}

class Turns implements FlowTurns {
  readonly #perTurn: number;
  /** Requests each flow started in this turn; cleared when the turn ends (its check phase). */
  #started = new Map<FlowKey, number>();
  #turnClosing = false;
  /** Flows with waiters, in the order they are served; a Map keeps insertion order. */
  readonly #ready = new Map<FlowKey, (() => void)[]>();
  #waiting = 0;
  #draining = false;

  constructor(perTurn: number) {
    this.#perTurn = perTurn;
  }

  enter(flow: FlowKey): Promise<void> | undefined {
    this.#closeTurnLater();
    const queue = this.#ready.get(flow);
    const started = this.#started.get(flow) ?? 0;
    // A flow with waiters goes behind them, so that its requests keep their order.
    if (queue === undefined && started < this.#perTurn) {
      this.#started.set(flow, started + 1);
      return undefined;
    }
    return new Promise((resolve) => {
      if (queue === undefined) this.#ready.set(flow, [resolve]);
      else queue.push(resolve);
      this.#waiting++;
      this.#drainLater();
    });
  }

  waiting(): number {
    return this.#waiting;
  }

  /** The turn's counts go at its check phase: requests started after it belong to the next turn. */
  #closeTurnLater(): void {
    if (this.#turnClosing) return;
    this.#turnClosing = true;
    setImmediate(() => {
      this.#turnClosing = false;
      this.#started = new Map();
    });
  }

  /** In a later check phase, each waiting flow starts up to its share, flows in turn. */
  #drainLater(): void {
    if (this.#draining) return;
    this.#draining = true;
    setImmediate(() => {
      this.#draining = false;
      // A flow served this time goes to the back of the line (a Map re-inserted at its end).
      for (const [flow, queue] of [...this.#ready]) {
        this.#ready.delete(flow);
        const started = this.#started.get(flow) ?? 0;
        const room = Math.max(0, this.#perTurn - started);
        const resumed = queue.splice(0, room);
        this.#started.set(flow, started + resumed.length);
        this.#waiting -= resumed.length;
        for (const resume of resumed) resume();
        if (queue.length > 0) this.#ready.set(flow, queue);
      }
      // The requests resumed count in the turn that follows, until its check phase.
      this.#closeTurnLater();
      if (this.#ready.size > 0) this.#drainLater();
    });
  }
}
