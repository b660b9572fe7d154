/** Reading a proxy's /metrics text (Prometheus exposition format), in tests and the bench. */

/** The sum of `name`'s series whose labels include every one of `labels`. */
export function metricSum(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
