/**
 * The proxy's log, in a Kubernetes component's formats (k8s.io/component-base/logs,
 * `--logging-format`):
 *
 * - `text` (the default, as klog's): one line per entry,
 *   `I1129 01:57:23.123456   12345 kube-cache-proxy] "proxying to the apiserver" upstream="https://…"`:
 *   the severity (I, W, E), month and day, local time to the microsecond, the process id, where
 *   the line comes from (klog's file:line; here the component's name), then the message quoted
 *   and its fields as `key=value` (strings quoted, numbers and booleans bare, the rest as JSON).
 * - `json` (component-base's logs/json): `{"ts":1795916243.123456,"v":0,"msg":"…",…}`, `ts` in
 *   seconds since the epoch, `v` the verbosity of an info line, none on an error line, whose error
 *   is the string `err`; warnings are info lines at `v` 0, as klog writes them in JSON.
 *
 * `-v N` is klog's verbosity: 4 and above shows the debug lines (one per request among them), at
 * `v` 4. The entries come from pino (Fastify's logger), written to `out` synchronously: stderr,
 * as klog's, so that stdout holds only what the command itself prints (kubectl proxy's
 * `Starting to serve on ADDRESS`, which scripts read) and a log collector reads one format.
 */
import { pino } from 'pino';
import type { DestinationStream, LoggerOptions } from 'pino';
import type { FastifyBaseLogger } from 'fastify';

export const LOGGING_FORMATS = ['text', 'json'] as const;
export type LoggingFormat = (typeof LOGGING_FORMATS)[number];

/** Where klog's header names the source; the proxy's lines have no file:line worth giving. */
const SOURCE = 'kube-cache-proxy';
/** The verbosity debug lines are written at (kube's convention: 4 is debug). */
export const DEBUG_VERBOSITY = 4;

/** pino's numeric levels. */
const INFO = 30;
const WARN = 40;
const ERROR = 50;

export interface LoggerSettings {
  /** pino's level name (what is written at all). */
  readonly level: string;
  readonly format: LoggingFormat;
  /** Where lines go; default: stderr, as klog writes (stdout has the command's own lines: `Starting to serve on`). */
  readonly out?: { write(line: string): unknown };
}

const two = (n: number): string => String(n).padStart(2, '0');

/** klog's header (klog.go formatHeader): `Lmmdd hh:mm:ss.uuuuuu threadid source] `. */
export function klogHeader(level: number, time: Date, pid: number): string {
  const severity = level >= ERROR ? 'E' : level >= WARN ? 'W' : 'I';
  const micros = String(time.getMilliseconds() * 1000).padStart(6, '0');
  return (
    `${severity}${two(time.getMonth() + 1)}${two(time.getDate())} ` +
    `${two(time.getHours())}:${two(time.getMinutes())}:${two(time.getSeconds())}.${micros} ` +
    `${String(pid).padStart(7)} ${SOURCE}] `
  );
}

/** A field's value as klog's text writes it. */
function klogValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  // undefined (a field set to nothing) has no JSON: klog writes <nil>.
  if (value === undefined) return '<nil>';
  return JSON.stringify(value);
}

/** One pino entry (its JSON line) as a klog text line. */
export function klogLine(json: string, pid: number = process.pid): string {
  const { level, time, msg, ...fields } = JSON.parse(json) as { level: number; time: number; msg?: string } & Record<string, unknown>;
  let line = `${klogHeader(level, new Date(time), pid)}${JSON.stringify(msg ?? '')}`;
  for (const [key, value] of Object.entries(fields)) line += ` ${key}=${klogValue(value)}`;
  return `${line}\n`;
}

/** A destination that turns pino's JSON lines into klog's text. */
function klogText(out: { write(line: string): unknown }): DestinationStream {
  return {
    write(chunk: string) {
      for (const json of chunk.split('\n')) if (json !== '') out.write(klogLine(json));
    },
  };
}

/** An error as component-base writes it: its message (Go's err.Error()). */
function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : JSON.stringify(error);
}

export function newProxyLogger(settings: LoggerSettings): FastifyBaseLogger {
  const out = settings.out ?? process.stderr;
  const common: LoggerOptions = {
    level: settings.level,
    // No pid and hostname on every line: klog's header has the pid; a pod's name is its own.
    base: undefined,
    serializers: { err: errorText },
  };
  if (settings.format === 'text') {
    return pino({ ...common, timestamp: pino.stdTimeFunctions.epochTime }, klogText(out));
  }
  return pino(
    {
      ...common,
      // The time is written by the level's formatter, first, as component-base's encoder writes it.
      timestamp: false,
      formatters: {
        // Info lines carry their verbosity; error lines none (component-base's JSON encoder).
        level: (_label, number) => {
          const ts = Date.now() / 1000;
          return number >= ERROR ? { ts } : { ts, v: number < INFO ? DEBUG_VERBOSITY : 0 };
        },
      },
    },
    { write: (line: string) => out.write(line) },
  );
}
