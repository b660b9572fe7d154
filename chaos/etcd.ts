/**
 * etcd compaction through its v3 HTTP gateway (the grpc-gateway JSON mapping of KV.Range and
 * KV.Compact: keys in base64, 64-bit numbers as strings): what the apiserver's own compactor does
 * every 5 minutes, done now, so that every revision before the current one is gone and a LIST or
 * WATCH at an older resourceVersion that reaches etcd gets 410 Expired.
 */
import { request } from 'undici';

/** etcd's current revision (the header of any Range). */
export async function etcdRevision(etcdUrl: string): Promise<number> {
  const res = await request(`${etcdUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from('/registry').toString('base64'), count_only: true }),
  });
  const body = (await res.body.json()) as { header?: { revision?: string } };
  const revision = Number(body.header?.revision);
  if (res.statusCode !== 200 || !Number.isInteger(revision))
    throw new Error(`etcd range: ${String(res.statusCode)} ${JSON.stringify(body)}`);
  return revision;
}

/** Compacts etcd at its current revision (physical: returns once the old revisions are removed); returns it. */
export async function compactEtcd(etcdUrl: string): Promise<number> {
  const revision = await etcdRevision(etcdUrl);
  const res = await request(`${etcdUrl}/v3/kv/compaction`, {
    method: 'POST',
    body: JSON.stringify({ revision: String(revision), physical: true }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`etcd compaction at ${String(revision)}: ${String(res.statusCode)} ${text}`);
  return revision;
}
