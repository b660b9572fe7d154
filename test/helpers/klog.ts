/**
 * klog's text lines as the proxy writes them (src/proxy/logging.ts), read back: the severity
 * (I, W, E), the message, and the fields after it as written (`key="value" n=3`).
 */
export interface KlogEntry {
  readonly severity: 'I' | 'W' | 'E' | 'F';
  readonly msg: string;
  readonly fields: string;
}

/** klog.go formatHeader, then the quoted message and its fields. */
const KLOG_LINE = /^([IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [^ \]]+\] ("(?:[^"\\]|\\.)*")(.*)$/;

/** The entry of a klog text line, or undefined for another line (the serving line, a cut line). */
export function parseKlogLine(line: string): KlogEntry | undefined {
  const match = KLOG_LINE.exec(line);
  if (match === null) return undefined;
  return { severity: match[1] as KlogEntry['severity'], msg: JSON.parse(match[2] ?? '""') as string, fields: (match[3] ?? '').trim() };
}
