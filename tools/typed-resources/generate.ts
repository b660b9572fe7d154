/**
 * Writes src/library/resources.ts, the typed resources of the library (`pods`, `deployments`, ...),
 * from the sources of truth instead of by hand:
 * - which resources have typed informers, by group, version and plural name: client-go's
 *   informers/generic.go (informer-gen's ForResource table, `<pkg>.SchemeGroupVersion.WithResource("pods")`
 *   → `f.Core().V1().Pods()`);
 * - each one's kind and whether it is namespaced: its version's informers/<group>/<version>/interface.go
 *   (`Pods() TypedPodInformer`, built with `namespace: v.namespace` when namespaced);
 * - each group's name: k8s.io/api's register.go (`const GroupName = "apps"`);
 * - the model: client-node's generated models (dist/gen/models/V1Pod.d.ts), named as its
 *   ObjectSerializer names them (src/library/object-decoder.ts clientNodeModel).
 * Stable versions only (v1, v2: served by default), the newest of each resource; test/e2e/library/
 * typed-resources.test.ts holds every entry to the test apiserver's discovery.
 *
 * Run: node tools/typed-resources/generate.ts [GOMODCACHE]  (default: `go env GOMODCACHE`), then prettier.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clientNodeModel } from '../../src/library/object-decoder.ts';

const K8S_VERSION = 'v0.37.2';
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const modcache = process.argv[2] ?? execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
const clientGo = join(modcache, `k8s.io/client-go@${K8S_VERSION}`);
const api = join(modcache, `k8s.io/api@${K8S_VERSION}`);
const models = join(ROOT, 'node_modules/@kubernetes/client-node/dist/gen/models');

interface Entry {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly model: string;
  /** The informer accessor's name (`Pods`), the constant's name once camel-cased. */
  readonly accessor: string;
}

const generic = readFileSync(join(clientGo, 'informers/generic.go'), 'utf8');
const packages = new Map<string, string>();
for (const m of generic.matchAll(/^\s+(\w+) "k8s\.io\/api\/([\w/]+)"$/gm)) packages.set(m[1] ?? '', m[2] ?? '');

/**
 * Resources client-go has informers for that the apiserver cannot watch: an informer of them
 * would fail at its first watch. componentstatuses: its REST storage
 * (kubernetes pkg/registry/core/componentstatus/rest.go) serves get and list only.
 */
const UNWATCHABLE = new Set(['/componentstatuses']);

const entries: Entry[] = [];
const skipped: string[] = [];
const cases = /case (\w+)\.SchemeGroupVersion\.WithResource\("([a-z0-9]+)"\):\n\s+return .*?f\.\w+\(\)\.\w+\(\)\.(\w+)\(\)\.Informer\(\)/g;
for (const m of generic.matchAll(cases)) {
  const [, alias = '', resource = '', accessor = ''] = m;
  const pkg = packages.get(alias);
  if (pkg === undefined) throw new Error(`no import for ${alias}`);
  const version = pkg.slice(pkg.lastIndexOf('/') + 1);
  if (!/^v[0-9]+$/.test(version)) continue;
  const register = readFileSync(join(api, pkg, 'register.go'), 'utf8');
  const group = /const GroupName = "([^"]*)"/.exec(register)?.[1];
  if (group === undefined) throw new Error(`no GroupName in ${pkg}/register.go`);
  if (UNWATCHABLE.has(`${group}/${resource}`)) {
    skipped.push(`${resource}.${group}/${version}: not watchable`);
    continue;
  }
  const iface = readFileSync(join(clientGo, 'informers', pkg, 'interface.go'), 'utf8');
  const method = new RegExp(`func \\(v \\*version\\) ${accessor}\\(\\) Typed(\\w+)Informer \\{\\n\\s+return &\\w+\\{([^}]*)\\}`).exec(
    iface,
  );
  if (method === null) throw new Error(`no ${accessor}() in informers/${pkg}/interface.go`);
  const kind = method[1] ?? '';
  const namespaced = (method[2] ?? '').includes('namespace: v.namespace');
  const model = clientNodeModel({ apiVersion: group === '' ? version : `${group}/${version}`, kind });
  if (!existsSync(join(models, `${model}.d.ts`))) {
    skipped.push(`${resource}.${group}/${version} (${kind}): client-node has no ${model}`);
    continue;
  }
  entries.push({ group, version, resource, kind, namespaced, model, accessor });
}

// The newest stable version of each group's resource (autoscaling/v2 over v1).
const newest = new Map<string, Entry>();
for (const e of entries) {
  const key = `${e.group}/${e.resource}`;
  const seen = newest.get(key);
  if (seen === undefined || Number(e.version.slice(1)) > Number(seen.version.slice(1))) newest.set(key, e);
}
const chosen = [...newest.values()];

// A name two groups share (events) is the core group's; the others are prefixed with their group.
const camel = (s: string): string => s.charAt(0).toLowerCase() + s.slice(1);
const byAccessor = new Map<string, number>();
for (const e of chosen) byAccessor.set(e.accessor, (byAccessor.get(e.accessor) ?? 0) + 1);
const constName = (e: Entry): string => {
  if ((byAccessor.get(e.accessor) ?? 0) === 1 || e.group === '') return camel(e.accessor);
  const first = e.group.split('.')[0] ?? e.group;
  return `${camel(first)}${e.version.toUpperCase()}${e.accessor}`;
};
chosen.sort((a, b) => constName(a).localeCompare(constName(b)));

const lines: string[] = [];
lines.push('/**');
lines.push(' * The built-in resources with typed informers, each tied to its client-node model: `informerFor(pods)`');
lines.push(' * gives a SharedIndexInformer<V1Pod> with no type argument.');
lines.push(' *');
lines.push(` * GENERATED by tools/typed-resources/generate.ts from client-go ${K8S_VERSION} informers/generic.go and`);
lines.push(' * interface.go (group, version, plural, kind, scope), k8s.io/api register.go (group names) and');
lines.push(" * client-node's models; do not edit. Stable versions, the newest of each resource;");
lines.push(" * test/e2e/library/typed-resources.test.ts checks each against the apiserver's discovery.");
lines.push(' */');
const types = [...new Set(chosen.map((e) => e.model))].sort();
lines.push(`import type { ${types.join(', ')} } from '@kubernetes/client-node';`);
lines.push("import type { Resource } from './resource.ts';");
lines.push("import { builtInResource } from './resource.ts';");
lines.push('');
for (const e of chosen) {
  const gv = e.group === '' ? e.version : `${e.group}/${e.version}`;
  lines.push(`/** ${e.resource} (${gv} ${e.kind}, ${e.namespaced ? 'namespaced' : 'cluster-scoped'}): client-go \`${e.accessor}()\`. */`);
  lines.push(
    `export const ${constName(e)}: Resource<${e.model}> = builtInResource('${e.group}', '${e.version}', '${e.resource}', '${e.kind}', ${String(e.namespaced)});`,
  );
}
lines.push('');
lines.push('/** Every resource above, for whoever needs them all (discovery checks, a generic controller). */');
lines.push(`export const builtInResources: readonly Resource<unknown>[] = [${chosen.map(constName).join(', ')}];`);
lines.push('');
writeFileSync(join(ROOT, 'src/library/resources.ts'), lines.join('\n'));
console.log(`${String(chosen.length)} resources written to src/library/resources.ts`);
for (const s of skipped) console.log(`skipped ${s}`);
