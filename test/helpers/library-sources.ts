/**
 * In this process, the library's package names resolve to its TypeScript sources, with no build:
 * `kube-cache-proxy/...` as `node --conditions=kube-cache-proxy-source` makes it (package.json
 * `exports`), `@kube-cache-proxy/client/<part>` to `src/library/<part>.ts` (what
 * packages/client's build compiles; tsconfig's `paths` says the same to the type checker). For
 * tests of code written against the packages (examples/). Import this module first, then such
 * code dynamically, since a module's static imports are all resolved before any of them runs.
 */
import { registerHooks } from 'node:module';

const CLIENT = '@kube-cache-proxy/client/';
const LIBRARY = new URL('../../src/library/', import.meta.url);

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier.startsWith(CLIENT)) {
      return { url: new URL(`${specifier.slice(CLIENT.length)}.ts`, LIBRARY).href, format: 'module-typescript', shortCircuit: true };
    }
    if (specifier !== 'kube-cache-proxy' && !specifier.startsWith('kube-cache-proxy/')) return nextResolve(specifier, context);
    return nextResolve(specifier, { ...context, conditions: [...context.conditions, 'kube-cache-proxy-source'] });
  },
});
