/**
 * The apiserver's version (`GET /version`, apimachinery's version.Info), checked against the
 * oldest Kubernetes the proxy and its manifests are made for: deploy/'s sidecar is a native
 * sidecar (an init container with `restartPolicy: Always`, on by default since 1.29), and the
 * proxy's reads rely on what that release serves. An older apiserver is said once, at start, in a
 * warning: the proxy still serves (its reads pass through where the apiserver lacks something),
 * but nobody has tested it there.
 */
import type { UpstreamClient } from './client.ts';

/** The oldest minor release the proxy is made for (docs/compatibility.md). */
export const MIN_KUBERNETES_MINOR = 29;

export interface ServerVersion {
  /** `gitVersion`, e.g. `v1.37.2`. */
  readonly gitVersion: string;
  readonly major: number;
  /** The minor release; a `+` suffix (`29+`, as some distributions write it) dropped. */
  readonly minor: number;
}

/** version.Info's fields, as the apiserver writes them (major and minor as strings). */
export function parseServerVersion(body: string): ServerVersion | undefined {
  let info: { major?: unknown; minor?: unknown; gitVersion?: unknown };
  try {
    info = JSON.parse(body) as typeof info;
  } catch {
    return undefined;
  }
  const major = typeof info.major === 'string' ? Number.parseInt(info.major, 10) : NaN;
  const minor = typeof info.minor === 'string' ? Number.parseInt(info.minor, 10) : NaN;
  if (!Number.isInteger(major) || !Number.isInteger(minor)) return undefined;
  return { gitVersion: typeof info.gitVersion === 'string' ? info.gitVersion : `v${String(major)}.${String(minor)}`, major, minor };
}

/** What to warn of for this version, or undefined when it is one the proxy is made for. */
export function versionWarning(version: ServerVersion): string | undefined {
  if (version.major > 1 || version.minor >= MIN_KUBERNETES_MINOR) return undefined;
  return (
    `the apiserver is Kubernetes ${version.gitVersion}, older than 1.${String(MIN_KUBERNETES_MINOR)}, the oldest this proxy is made for: ` +
    `it serves, untested; deploy/'s native sidecar needs 1.29 (docs/compatibility.md)`
  );
}

/** Asks the apiserver its version; undefined when it does not answer one (never throws). */
export async function serverVersion(client: UpstreamClient): Promise<ServerVersion | undefined> {
  try {
    const res = await client.request({ method: 'GET', path: '/version', headers: { accept: 'application/json' } });
    return res.statusCode === 200 ? parseServerVersion(res.body.toString()) : undefined;
  } catch {
    return undefined;
  }
}
