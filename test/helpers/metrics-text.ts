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

const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The labels of one sample line (`name{k="v",...} value`), their values unescaped. */
function labelsOf(line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const body = line.slice(line.indexOf('{') + 1, line.lastIndexOf('}'));
  for (const [, key = '', value = ''] of body.matchAll(LABEL)) {
    labels[key] = value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

/** The sum of `name`'s series whose labels `keep` accepts. */
export function metricSumWhere(text: string, name: string, keep: (labels: Readonly<Record<string, string>>) => boolean): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) || !keep(labelsOf(line))) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
