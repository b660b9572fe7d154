/**
 * `--state-dir`: where each cache's state is kept across a restart (cache-state.ts is the file's
 * format). No apiserver counterpart. A cache started with a state of its own here is restored
 * from it (RunningCaches.start) and resumes its upstream watch from the state's RV; the caches
 * running are written here when the proxy stops and, while it runs, every save period for those
 * whose RV moved since their last write.
 *
 * The cost is bounded: one cache written at a time; each write copies at most STATE_PIECE_BYTES
 * per turn of the event loop and writes it before the next (the disk paces it); a state is
 * written to a temporary file, flushed and renamed over the old one, so a reader sees a whole
 * state or the one before, and a crash mid-write leaves a file the checksum refuses.
 *
 * A state is restored only when it is of this cluster, this proxy version and this cache's scope,
 * whole (its checksum), and younger than MAX_STATE_AGE_MS; anything else is refused with a log
 * line, deleted, and never served.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { CacheState } from './watch-cache.ts';
import type { DecodedState, StateIdentity } from './cache-state.ts';
import { StateRefusal, decodeState, encodeState } from './cache-state.ts';

/**
 * A state saved longer ago than this is not restored: it could resume only if the apiserver's
 * watch history still reached back to it (its watch cache keeps 75 s to a few minutes of events,
 * etcd's compaction 5 minutes), and meanwhile its `resourceVersion=0` answers would be that old.
 */
export const MAX_STATE_AGE_MS = 5 * 60_000;
/** The default period of the saves while running (`--state-save-period`). */
export const DEFAULT_STATE_SAVE_PERIOD_MS = 60_000;

export type StateLog = (level: 'info' | 'warn' | 'debug', message: string, fields?: Record<string, unknown>) => void;

export interface StateDirOptions {
  readonly dir: string;
  /** The cluster and version the states are of (StateIdentity without the scope). */
  readonly cluster: string;
  readonly proxyVersion: string;
  readonly log: StateLog;
  /** Wall-clock ms (Date.now): states are dated across restarts. */
  readonly now?: () => number;
  /** Told of each write: its bytes and its time in ms, or that it failed (metrics). */
  readonly onSave?: (outcome: { readonly bytes: number; readonly seconds: number } | 'failed') => void;
  /** Told of each state found for a cache that starts: restored, or refused (metrics). */
  readonly onLoad?: (result: StateLoadResult) => void;
}

export type StateLoadResult = 'restored' | 'refused';

/** What a save wrote. */
export interface SaveResult {
  readonly bytes: number;
  readonly objects: number;
  readonly events: number;
  readonly ms: number;
}

export class StateDir {
  readonly #options: StateDirOptions;
  readonly #now: () => number;
  /** The writes in order: one at a time. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: StateDirOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    mkdirSync(options.dir, { recursive: true });
  }

  /** The file of a scope: readable, and unique by a hash of the whole scope key. */
  path(scope: string): string {
    const readable = scope.replace(/[^a-z0-9.-]+/gi, '_').slice(0, 80);
    const hash = createHash('sha256').update(scope).digest('hex').slice(0, 16);
    return join(this.#options.dir, `${readable}-${hash}.state`);
  }

  /**
   * The saved state of `scope`, if there is one this proxy may serve; a state it may not is
   * refused with a log line and deleted. Synchronous: a cache is restored in the turn it starts.
   */
  load(scope: string): DecodedState | undefined {
    const path = this.path(scope);
    let file: Buffer;
    try {
      file = readFileSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
        this.#options.log('warn', `cannot read the saved state ${path}: ${String(error)}`);
      return undefined;
    }
    try {
      const decoded = decodeState(file);
      const problem = this.#refusal(decoded, scope);
      if (problem !== undefined) throw new StateRefusal(problem);
      const { state } = decoded;
      this.#options.log(
        'info',
        `restored the saved state at resourceVersion ${String(state.resourceVersion)}: ${String(decoded.objects)} objects, ${String(state.window.events.length)} events, saved ${String(Math.round((this.#now() - decoded.savedAt) / 1000))} s ago; resuming its watch`,
        { scope },
      );
      this.#options.onLoad?.('restored');
      return decoded;
    } catch (error) {
      const why = error instanceof StateRefusal ? error.message : `unreadable: ${String(error)}`;
      this.#options.log('warn', `saved state refused, not served (the cache lists as at a first start): ${why}`, { path, scope });
      rmSync(path, { force: true });
      this.#options.onLoad?.('refused');
      return undefined;
    }
  }

  #refusal(decoded: DecodedState, scope: string): string | undefined {
    const { identity } = decoded;
    if (identity.cluster !== this.#options.cluster)
      return `another cluster's (kube-system namespace UID ${identity.cluster}, this cluster's is ${this.#options.cluster})`;
    if (identity.proxyVersion !== this.#options.proxyVersion)
      return `another proxy version's (${identity.proxyVersion}, this is ${this.#options.proxyVersion})`;
    if (identity.scope !== scope) return `another cache's (${identity.scope})`;
    const age = this.#now() - decoded.savedAt;
    if (age > MAX_STATE_AGE_MS) return `saved ${String(Math.round(age / 1000))} s ago, more than ${String(MAX_STATE_AGE_MS / 1000)} s`;
    return undefined;
  }

  /** Writes `state` of `scope`, after the writes before it; resolves when it is on disk. */
  save(scope: string, state: CacheState): Promise<SaveResult> {
    const identity: StateIdentity = { cluster: this.#options.cluster, proxyVersion: this.#options.proxyVersion, scope };
    const write = this.#queue.then(() => this.#write(scope, state, identity));
    this.#queue = write.catch(() => {
      this.#options.onSave?.('failed');
    });
    return write;
  }

  async #write(scope: string, state: CacheState, identity: StateIdentity): Promise<SaveResult> {
    const started = performance.now();
    const path = this.path(scope);
    const temporary = `${path}.tmp`;
    const encoded = encodeState(state, identity, this.#now());
    const handle = await open(temporary, 'w');
    try {
      // Each piece is copied when reached and written before the next: a turn per piece.
      for (const piece of encoded.pieces()) await handle.write(piece);
      await handle.sync();
    } catch (error) {
      await handle.close();
      await rm(temporary, { force: true });
      throw error;
    }
    await handle.close();
    await rename(temporary, path);
    const ms = performance.now() - started;
    this.#options.onSave?.({ bytes: encoded.bytes, seconds: ms / 1000 });
    return { bytes: encoded.bytes, objects: encoded.objects, events: encoded.events, ms };
  }

  /** Deletes the saved state of `scope` (a cache that lists anew: its old state would only be refused later). */
  forget(scope: string): void {
    rmSync(this.path(scope), { force: true });
  }
}
