/**
 * In this process, `kube-cache-proxy/...` resolves to the library's TypeScript sources, as
 * `node --conditions=kube-cache-proxy-source` makes it (package.json `exports`): for tests of code
 * written against the package (examples/), with no build. Import this module first, then such code
 * dynamically, since a module's static imports are all resolved before any of them runs.
 */
import { registerHooks } from 'node:module';

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier !== 'kube-cache-proxy' && !specifier.startsWith('kube-cache-proxy/')) return nextResolve(specifier, context);
    return nextResolve(specifier, { ...context, conditions: [...context.conditions, 'kube-cache-proxy-source'] });
  },
});
