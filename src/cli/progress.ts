/** Progress for long work (builds, waits): a line when a step starts, then one every `everyMs`. */
export interface Progress {
  /** Prints a line at once. */
  log(line: string): void;
  /** Starts a step: prints `label`, then `label (elapsed, detail())` every `everyMs` until stopped. */
  step(label: string, detail?: () => string): ProgressStep;
}

export interface ProgressStep {
  /** Stops the ticker and prints `label: done in <elapsed>`. */
  done(note?: string): void;
  /** Stops the ticker without a line (the caller reports the failure). */
  fail(): void;
}

/** Formats milliseconds as `1m05s` / `12.3s`. */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.floor((ms % 60_000) / 1000);
  return `${minutes}m${String(seconds).padStart(2, '0')}s`;
}

export function newProgress(write: (line: string) => void = (line) => process.stderr.write(`${line}\n`), everyMs = 15_000): Progress {
  return {
    log: write,
    step(label, detail) {
      const started = Date.now();
      write(`${label}...`);
      const timer = setInterval(() => {
        const extra = detail?.();
        write(`  ${label}: ${formatDuration(Date.now() - started)}${extra ? `, ${extra}` : ''}`);
      }, everyMs);
      timer.unref();
      return {
        done(note) {
          clearInterval(timer);
          write(`  ${label}: done in ${formatDuration(Date.now() - started)}${note ? ` (${note})` : ''}`);
        },
        fail() {
          clearInterval(timer);
        },
      };
    },
  };
}

/** A Progress that prints nothing (library use, tests). */
export const silentProgress: Progress = newProgress(() => undefined);
