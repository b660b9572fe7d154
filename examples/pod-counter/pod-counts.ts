/**
 * What the pod counter writes: a namespace's pods counted by phase, as a ConfigMap's data. Pure
 * functions, so that the reconcile decision (write or not) is a comparison of data.
 */
/** The phases a pod can be in (core/v1 PodPhase); a pod without one yet counts as Pending, as the apiserver defaults it. */
export const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'] as const;

/** What counting reads of a pod (a client-node V1Pod, or its JSON). */
export interface PodPhase {
  /** Its status: the phase. */
  readonly status?: { readonly phase?: string | undefined } | undefined;
}

/** The ConfigMap data for `pods`: `total` and one key per phase, every key always present (zeros included). */
export function podCounts(pods: readonly PodPhase[]): Record<string, string> {
  const counts = new Map<string, number>(PHASES.map((phase) => [phase, 0]));
  for (const pod of pods) {
    const phase = pod.status?.phase ?? 'Pending';
    counts.set(phase, (counts.get(phase) ?? 0) + 1);
  }
  return { total: String(pods.length), ...Object.fromEntries([...counts].map(([phase, n]) => [phase, String(n)])) };
}

/** True if a ConfigMap's data already says `want` (no other key, no other value). */
export function sameData(have: Readonly<Record<string, string>> | undefined, want: Readonly<Record<string, string>>): boolean {
  const haveKeys = Object.keys(have ?? {});
  return haveKeys.length === Object.keys(want).length && haveKeys.every((key) => have?.[key] === want[key]);
}
