/**
 * The connections written in one turn of the event loop, uncorked together at its end (the
 * apiserver's cacher dispatches each event to every watcher's buffer without blocking, then its
 * goroutines write; here the turn's writes are gathered per connection and each connection is
 * written once, in one vectored write, after the turn's last event).
 *
 * One flush per turn, not one per connection: a change seen by 10,000 watchers costs one
 * scheduled callback, not 10,000. Connections are uncorked in the order they were first written,
 * so the watchers an event reached first get its bytes first. A turn that runs long is cut into
 * several (flushIfOlderThan): holding a burst's first events until its last would add the whole
 * burst's time to their latency.
 *
 * Invariant: a member is corked once per turn it joins and uncorked once, by the flush or, when it
 * leaves the turn first (it is closing), by leave.
 */
import type { Writable } from 'node:stream';

export interface TurnMember {
  /** The connection to cork now and uncork at the end of the turn. */
  readonly sink: Writable;
  /** The turn this member last joined (WriteTurn's own mark; start at -1). */
  joinedTurn: number;
  /** Called after the connection was uncorked (what it could not take is measured then). */
  afterTurn(): void;
}

export class WriteTurn {
  /** A monotonic clock in ms (performance.now): a turn's age is measured in a turn, not on the proxy's clock. */
  readonly #now: () => number;
  #members: TurnMember[] = [];
  /** The current turn's number; a member is in it while its joinedTurn equals it. */
  #turn = 0;
  #scheduled = false;
  /** When the current turn's first connection was corked (performance.now()). */
  #startedAt = 0;
  readonly #flush = (): void => {
    if (this.#members.length === 0) {
      this.#scheduled = false;
      return;
    }
    const members = this.#members;
    const turn = this.#turn;
    this.#members = [];
    this.#turn++;
    this.#scheduled = false;
    for (const member of members) {
      if (member.joinedTurn !== turn) continue;
      member.sink.uncork();
      member.afterTurn();
    }
  };

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** Corks `member`'s connection until the end of this turn, once per turn. */
  join(member: TurnMember): void {
    if (member.joinedTurn === this.#turn) return;
    member.joinedTurn = this.#turn;
    this.#members.push(member);
    member.sink.cork();
    if (this.#members.length === 1) this.#startedAt = this.#now();
    if (!this.#scheduled) {
      this.#scheduled = true;
      process.nextTick(this.#flush);
    }
  }

  /**
   * Ends the turn now if its first write is older than `budgetMs`: a burst of events handled in
   * one turn (an upstream watch that fell behind delivers hundreds in one read) is written out as
   * it goes, not held until its last event.
   */
  flushIfOlderThan(budgetMs: number): void {
    if (this.#members.length > 0 && this.#now() - this.#startedAt >= budgetMs) this.#flush();
  }

  /** Takes `member` out of the turn (it is closing): it is uncorked now, and not again at the flush. */
  leave(member: TurnMember): void {
    if (member.joinedTurn !== this.#turn) return;
    member.joinedTurn = -1;
    member.sink.uncork();
  }
}
