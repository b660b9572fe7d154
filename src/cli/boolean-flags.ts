/**
 * pflag's boolean flags (spf13/pflag bool.go): `--flag` alone is true, and `--flag=VALUE` takes
 * any value Go's strconv.ParseBool reads (`true`, `false`, `1`, `0`, `t`, `F`, …), as templated
 * manifests write them (`--shared=true`). `--flag VALUE` is not a value (NoOptDefVal): the word
 * after it is an argument of its own, as in pflag. node:util's parseArgs refuses `--flag=VALUE`
 * for a boolean, so those are taken out of the arguments first.
 */
import { CliError } from '../proxy/cli-error.ts';

export interface BooleanValues {
  /** The arguments without the `--flag=VALUE` of a boolean flag. */
  readonly args: string[];
  /** Each boolean flag given, alone (true) or with `=`: the last one, as pflag keeps, as typed. */
  readonly given: ReadonlyMap<string, { readonly value: boolean; readonly arg: string }>;
}

/** Go's strconv.ParseBool; undefined for anything else. */
export function goParseBool(value: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

/**
 * Takes `--NAME=VALUE` of each boolean flag NAME out of argv (a bare `--NAME` stays, for
 * parseArgs), up to a `--` that ends the flags, and notes the value each was given last.
 */
export function takeBooleanValues(argv: readonly string[], booleans: ReadonlySet<string>): BooleanValues {
  const args: string[] = [];
  const given = new Map<string, { value: boolean; arg: string }>();
  let flagsEnded = false;
  for (const arg of argv) {
    if (arg === '--') flagsEnded = true;
    const match = flagsEnded ? null : /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    const name = match?.[1];
    if (match === null || name === undefined || !booleans.has(name)) {
      args.push(arg);
      continue;
    }
    const text = match[2];
    if (text === undefined) {
      args.push(arg);
      given.set(name, { value: true, arg });
      continue;
    }
    const value = goParseBool(text);
    if (value === undefined) {
      // pflag's own words (flag.go failf, bool.go Set).
      throw new CliError(
        `invalid argument ${JSON.stringify(text)} for "--${name}" flag: strconv.ParseBool: parsing ${JSON.stringify(text)}: invalid syntax`,
        `Use --${name}, --${name}=true or --${name}=false.`,
      );
    }
    given.set(name, { value, arg });
  }
  return { args, given };
}
