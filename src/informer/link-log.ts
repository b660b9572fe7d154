/**
 * The reflector's upstream link as its log tells it: one line per transition, not one per retry.
 * An outage of a minute would otherwise write a line for each backoff of each cached type, and a
 * line about a failure that changes nothing hides the one that does.
 *
 * - The first failure after the link was up (or before it ever was) is logged at its own level;
 *   the failures that follow while it stays down are logged at debug, but for the first that
 *   matters more than what was logged (a 410 at info, then the apiserver unreachable: one warn).
 * - The watch opening again after failures is logged once at info, with how long it was down,
 *   how many attempts failed and the first reason.
 * - A watch the apiserver ends cleanly (its timeout) and that reopens at once is no transition.
 *
 * Messages carry no credentials: they are built from the reflector's name and error messages,
 * which name URLs' paths and Status reasons, never headers.
 */
import type { Clock } from '../clock/clock.ts';

export type LinkLogLevel = 'debug' | 'info' | 'warn';
export type LinkLogSink = (level: LinkLogLevel, message: string) => void;

export interface LinkLog {
  /** A list or watch failed with `message`; `level` is how much it matters when it is news. */
  failed(level: LinkLogLevel, message: string): void;
  /** The watch is open (again). */
  watching(): void;
}

interface Down {
  readonly since: number;
  readonly firstReason: string;
  failures: number;
  /** The highest level logged for this outage: a later failure that matters more is logged at its level once. */
  logged: LinkLogLevel;
}

const RANK: Readonly<Record<LinkLogLevel, number>> = { debug: 0, info: 1, warn: 2 };

export function newLinkLog(name: string, sink: LinkLogSink, clock: Clock): LinkLog {
  /** undefined: up, or never failed yet. */
  let down: Down | undefined;
  return {
    failed(level, message) {
      if (down !== undefined) {
        down.failures++;
        // A 410 (info) followed by an unreachable apiserver (warn) is news: said once at warn.
        const escalates = RANK[level] > RANK[down.logged];
        if (escalates) down.logged = level;
        sink(escalates ? level : 'debug', `${name}: ${message} (still failing: attempt ${String(down.failures)})`);
        return;
      }
      down = { since: clock.now(), firstReason: message, failures: 1, logged: level };
      sink(level, `${name}: ${message}; retrying, reads of it pass through until its watch is back`);
    },
    watching() {
      if (down === undefined) return;
      const seconds = (clock.now() - down.since) / 1000;
      const attempts = down.failures === 1 ? '1 failed attempt' : `${String(down.failures)} failed attempts`;
      sink('info', `${name}: watching again after ${seconds.toFixed(1)} s (${attempts}, first: ${down.firstReason})`);
      down = undefined;
    },
  };
}
