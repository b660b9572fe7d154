/**
 * deploy/'s kustomize bases as the deploy tests use them: in an overlay of the test's own (as a
 * user writes one, with a namespace), rendered by the apiserver in a server-side dry run, or
 * applied for real.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ControlPlaneState } from '../../../src/cli/dev-cluster/control-plane.ts';
import { mustRun } from './run.ts';

export const DEPLOY = fileURLToPath(new URL('../../../deploy/', import.meta.url));

export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Record<string, string> };
  readonly [field: string]: unknown;
}

/** A rule of a Role or ClusterRole. */
export interface PolicyRule {
  readonly apiGroups?: string[];
  readonly resources?: string[];
  readonly resourceNames?: string[];
  readonly nonResourceURLs?: string[];
  readonly verbs: string[];
}

export interface Probe {
  readonly exec?: { command: string[] };
  readonly httpGet?: { path: string; port: string | number; scheme?: string };
}

/** The fields of a container the deploy tests check. */
export interface Container {
  readonly name: string;
  readonly image?: string;
  readonly args?: string[];
  readonly command?: string[];
  readonly env?: {
    name: string;
    value?: string;
    valueFrom?: { fieldRef?: { fieldPath: string }; resourceFieldRef?: { resource: string; divisor?: string } };
  }[];
  readonly volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  readonly ports?: { name?: string; containerPort: number }[];
  readonly restartPolicy?: string;
  readonly startupProbe?: Probe;
  readonly livenessProbe?: Probe;
  readonly readinessProbe?: Probe;
  readonly resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  readonly securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
}

export interface Workload extends KubeObject {
  readonly spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
      spec: {
        serviceAccountName?: string;
        containers: Container[];
        initContainers?: Container[];
        volumes?: { name: string; secret?: { secretName: string }; configMap?: { name: string } }[];
      };
    };
  };
}

export function envOf(container: Container): Record<string, string> {
  return Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? '']));
}

/**
 * The container's environment as the kubelet makes it: `fields` for the downward API's fieldRefs,
 * and `$(NAME)` expanded from the variables defined before (kubelet's expansion.MappingFuncFor;
 * a reference to a later or unknown one is left as written).
 */
export function kubeletEnv(container: Container, fields: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    const path = e.valueFrom?.fieldRef?.fieldPath;
    env[e.name] =
      path === undefined
        ? (e.value ?? '').replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (ref, name: string) => env[name] ?? ref)
        : (fields[path] ?? '');
  }
  return env;
}

/**
 * `kubectl apply -k DIR -o json`, by default with --dry-run=server: the objects as the apiserver
 * would store them (admission, validation and RBAC's escalation check run), or stores.
 */
export async function applyKustomization(
  cp: ControlPlaneState,
  dir: string,
  options: { readonly namespace?: string; readonly dryRun?: boolean } = {},
): Promise<KubeObject[]> {
  const args = ['apply', '-k', dir, '-o', 'json', '--kubeconfig', cp.kubeconfig];
  if (options.dryRun !== false) args.push('--dry-run=server');
  if (options.namespace !== undefined) args.push('-n', options.namespace);
  const out = JSON.parse(await mustRun(cp.binaries.kubectl, args)) as KubeObject & { items?: KubeObject[] };
  return out.kind === 'List' ? (out.items ?? []) : [out];
}

/** A kustomization of the test's own, as a user writes one: resources, components, a namespace (and a name suffix). */
export function overlay(
  t: TestContext,
  body: { namespace: string; resources: string[]; components?: string[]; nameSuffix?: string; extra?: Record<string, string> },
): string {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-kustomize-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  // kustomize takes bases by relative path only.
  const rel = (p: string): string => (p.startsWith('/') ? relative(dir, p) : p);
  const lines = [
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    `namespace: ${body.namespace}`,
    // Quoted: a random suffix such as -123456 would otherwise read as a YAML number.
    ...(body.nameSuffix === undefined ? [] : [`nameSuffix: ${JSON.stringify(body.nameSuffix)}`]),
    'resources:',
    ...body.resources.map((r) => `  - ${rel(r)}`),
  ];
  if (body.components !== undefined) lines.push('components:', ...body.components.map((c) => `  - ${rel(c)}`));
  writeFileSync(join(dir, 'kustomization.yaml'), `${lines.join('\n')}\n`);
  for (const [name, text] of Object.entries(body.extra ?? {})) writeFileSync(join(dir, name), text);
  return dir;
}

/** The one object of `kind` (and `name`) among `objects`. */
export function only(objects: readonly KubeObject[], kind: string, name?: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  assert.equal(found.length, 1, `one ${kind}${name === undefined ? '' : ` ${name}`} in ${objects.map((o) => o.kind).join(', ')}`);
  return found[0] as KubeObject;
}
