/**
 * An error meant for a person at a terminal: what happened, and what to do next. The CLI prints
 * it without a stack trace; anything else that reaches the top is a bug and keeps its stack.
 */
export class CliError extends Error {
  readonly hint: string | undefined;

  constructor(message: string, hint?: string) {
    super(message);
    this.name = 'CliError';
    this.hint = hint;
  }

  /** The text printed for the user: the message, then the hint on its own line. */
  describe(): string {
    return this.hint === undefined ? this.message : `${this.message}\n${this.hint}`;
  }
}
