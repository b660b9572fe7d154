/**
 * What the image runs, read from the Dockerfile (there is no Docker engine here): its last
 * stage's ENTRYPOINT, CMD and ENV, and the JavaScript its build stage makes (scripts/build.mjs),
 * built into a directory of the test's or the bench's own, so that the proxy runs as it runs in
 * the image without `npm pack` and `npm ci`.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { DockerfileParser } from 'dockerfile-ast';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

function dockerfile(): ReturnType<typeof DockerfileParser.parse> {
  return DockerfileParser.parse(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
}

/** The last stage's ENTRYPOINT and CMD, exec form: `['node', 'dist/cli/main.js', 'proxy']`. */
export function imageCommand(): string[] {
  const parsed = dockerfile();
  const last = (instructions: { getArgumentsContent(): string | null }[]): string[] =>
    JSON.parse(instructions.at(-1)?.getArgumentsContent() ?? '[]') as string[];
  return [...last(parsed.getENTRYPOINTs()), ...last(parsed.getCMDs())];
}

/** The ENV of the image's last stage (the runtime's), as `NAME: value`. */
export function imageEnv(): Record<string, string> {
  const parsed = dockerfile();
  const from = parsed.getFROMs().at(-1)?.getRange().start.line ?? 0;
  const env: Record<string, string> = {};
  for (const instruction of parsed.getENVs()) {
    if (instruction.getRange().start.line < from) continue;
    for (const property of instruction.getProperties()) env[property.getName()] = property.getValue() ?? '';
  }
  return env;
}

/**
 * Builds the image's JavaScript into `dir` (dir/dist, beside a copy of package.json and a link
 * to the checkout's node_modules) and returns the image command's script path in it.
 */
export async function buildImageApp(dir: string): Promise<string> {
  await run(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--out', join(dir, 'dist')], { cwd: ROOT });
  copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const [node, script] = imageCommand();
  if (node !== 'node' || script === undefined) throw new Error(`the image runs ${String(node)} ${String(script)}, not node <script>`);
  return join(dir, script);
}
