import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `check` until it returns true, failing with `what` after `timeoutMs`. For waiting on
 * another process (which no event of ours can signal), never as a stand-in for a known event.
 */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await sleep(50);
  }
}
