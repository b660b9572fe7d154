/**
 * Failures of code the proxy calls on another's behalf, where the caller must go on: a watch
 * cache's listener (a watcher's bug must not end the reflector's watch), one watcher's delivery
 * (the others go on), the read-your-writes observers of a passed-through write or LIST (the
 * answer still reaches the client). Such a failure is never swallowed: it is counted
 * (`kube_cache_proxy_faults_total{site,resource}`) and logged, once per site and type with its
 * stack, at error (a fault is a bug), so a broken listener shows without flooding the log.
 */

/** Where a fault happened. */
export type FaultSite = 'watch-cache-listener' | 'watcher' | 'write-observer' | 'read-observer';

export interface Faults {
  /** A failure at `site` for `resource` (`resource[.group]`); the caller goes on. */
  report(site: FaultSite, resource: string, error: unknown): void;
}

export interface FaultsOptions {
  /** Counts one fault (the metric). */
  readonly count?: (site: FaultSite, resource: string) => void;
  /** Logs a fault, the first of its site and type only. */
  readonly log?: (message: string, fields: Readonly<Record<string, unknown>>) => void;
}

export function newFaults(options: FaultsOptions = {}): Faults {
  const logged = new Set<string>();
  return {
    report(site, resource, error) {
      options.count?.(site, resource);
      const key = `${site}\u0000${resource}`;
      if (logged.has(key)) return;
      logged.add(key);
      options.log?.(`${site} failed for ${resource} (logged once; counted in kube_cache_proxy_faults_total)`, {
        site,
        resource,
        err: error,
      });
    },
  };
}

/** Faults reported nowhere but to the process's stderr, once each: for callers given no reporter (tests, embedders). */
export const stderrFaults: Faults = newFaults({
  log: (message, fields) => {
    console.error(message, fields.err);
  },
});
