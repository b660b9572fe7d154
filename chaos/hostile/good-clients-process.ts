/**
 * The good clients' process (good-clients.ts `spawnGoodClients`): `node
 * chaos/hostile/good-clients-process.ts SPEC.json`, with an IPC channel to its parent.
 */
import { readFileSync } from 'node:fs';
import type { GoodClientsSpec } from './good-clients.ts';
import { serveGoodClients } from './good-clients.ts';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: good-clients-process.ts SPEC.json (started by spawnGoodClients)');
await serveGoodClients(JSON.parse(readFileSync(file, 'utf8')) as GoodClientsSpec);
