/**
 * TLS handshakes paced in time (tls-handshakes.ts): the pace and the order by address on a
 * stand-in server whose 'connection' listener records what it is handed, then a real node:https
 * server whose connections, paced, all complete their handshake and are answered.
 */
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { createServer, request } from 'node:https';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import { test } from 'node:test';
import { DEFAULT_TLS_HANDSHAKES_PER_SECOND, paceTlsHandshakes, pacingForRate } from '../../../../src/server/http/tls-handshakes.ts';
import { LOOPBACK_NAMES, generateServingCertificate } from '../../../../src/server/tls/serving-certificate.ts';

interface FakeSocket extends EventEmitter {
  readonly remoteAddress: string;
  destroyed: boolean;
  readonly name: string;
  destroy(): void;
}

function fakeSocket(remoteAddress: string, name: string): FakeSocket {
  const socket = new EventEmitter() as FakeSocket;
  Object.assign(socket, {
    remoteAddress,
    name,
    destroyed: false,
    destroy() {
      socket.destroyed = true;
    },
  });
  return socket;
}

function standIn(): { server: NetServer; handed: string[] } {
  const handed: string[] = [];
  const server = new EventEmitter() as unknown as NetServer;
  server.on('connection', (socket: Socket) => {
    handed.push((socket as unknown as FakeSocket).name);
  });
  return { server, handed };
}

/** A clock the test moves, and the pacing's timer on it: `advance` fires it once it is due. */
function manualClock(): {
  now: () => number;
  setTimer: (fire: () => void, ms: number) => () => void;
  advance: (ms: number) => void;
  pending: () => boolean;
} {
  let at = 0;
  let due: { fire: () => void; at: number } | undefined;
  return {
    now: () => at,
    setTimer(fire, ms) {
      const timer = { fire, at: at + ms };
      due = timer;
      return () => {
        if (due === timer) due = undefined;
      };
    },
    advance(ms) {
      at += ms;
      const timer = due;
      if (timer !== undefined && timer.at <= at) {
        due = undefined;
        timer.fire();
      }
    },
    pending: () => due !== undefined,
  };
}

test('handshakes: at most perWindow new connections are handed to TLS per window, the rest in later windows, in order, none lost', () => {
  const { server, handed } = standIn();
  const clock = manualClock();
  const pacing = paceTlsHandshakes(server, { perWindow: 2, windowMs: 20, ...clock });
  for (let i = 0; i < 7; i++) server.emit('connection', fakeSocket('10.0.0.1', `a${String(i)}`));
  assert.deepEqual(handed, ['a0', 'a1'], 'two at once, in the window they came');
  assert.equal(pacing.waiting(), 5);
  clock.advance(19);
  assert.deepEqual(handed, ['a0', 'a1'], 'nothing more within the window');
  for (const expected of [4, 6, 7]) {
    clock.advance(1);
    assert.equal(handed.length, expected);
    clock.advance(19);
  }
  assert.equal(clock.pending(), false, 'no timer once none wait');
  assert.deepEqual(handed, ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
  assert.equal(pacing.waiting(), 0);
  assert.equal(pacing.refused(), 0);
});

test('handshakes: waiting connections are handed over in turn by address, so one address’s burst never holds another’s behind it', () => {
  const { server, handed } = standIn();
  const clock = manualClock();
  paceTlsHandshakes(server, { perWindow: 1, windowMs: 20, ...clock });
  for (let i = 0; i < 20; i++) server.emit('connection', fakeSocket('10.0.0.1', `a${String(i)}`));
  server.emit('connection', fakeSocket('10.0.0.2', 'b0'));
  server.emit('connection', fakeSocket('10.0.0.2', 'b1'));
  for (let i = 0; i < 4; i++) clock.advance(20);
  assert.deepEqual(handed, ['a0', 'a1', 'b0', 'a2', 'b1']);
});

test('handshakes: a connection its client closed while waiting is dropped; past the bound per address a new one is closed unread', () => {
  const { server, handed } = standIn();
  const clock = manualClock();
  const pacing = paceTlsHandshakes(server, { perWindow: 1, windowMs: 20, maxWaitingPerAddress: 3, ...clock });
  const sockets = Array.from({ length: 6 }, (_, i) => fakeSocket('10.0.0.1', `a${String(i)}`));
  for (const socket of sockets) server.emit('connection', socket);
  assert.equal(pacing.waiting(), 3, 'a0 handed over, a1-a3 waiting');
  assert.equal(pacing.refused(), 2);
  assert.deepEqual(
    sockets.map((s) => s.destroyed),
    [false, false, false, false, true, true],
  );
  // A reset while waiting is no crash (an 'error' listener is held), and the socket is skipped.
  sockets[1]?.emit('error', new Error('ECONNRESET'));
  sockets[1]?.destroy();
  for (let i = 0; i < 2; i++) clock.advance(20);
  assert.deepEqual(handed, ['a0', 'a2', 'a3']);
  assert.equal(pacing.waiting(), 0);
  assert.equal(sockets[2]?.listenerCount('error'), 0, 'its error listener is removed at the handover');
});

test('handshakes: a rate a second is windows of 5 ms while each holds one handshake or more, one per longer window below; 0 is none', () => {
  assert.deepEqual(pacingForRate(DEFAULT_TLS_HANDSHAKES_PER_SECOND), { perWindow: 1, windowMs: 5 });
  assert.deepEqual(pacingForRate(1000), { perWindow: 5, windowMs: 5 });
  assert.deepEqual(pacingForRate(50), { perWindow: 1, windowMs: 20 });
  assert.deepEqual(pacingForRate(10), { perWindow: 1, windowMs: 100 });
  assert.equal(pacingForRate(0), undefined);
});

test('handshakes: on a real TLS server, 40 connections opened at once, paced 2 per 100 ms, are all handshaken and answered', async (t) => {
  const made = generateServingCertificate(LOOPBACK_NAMES);
  const server = createServer({ cert: made.cert, key: made.key }, (req, res) => {
    res.end(req.url);
  });
  // Slow enough that connections arriving at once wait, however loaded the machine (2 s in all).
  const pacing = paceTlsHandshakes(server, { perWindow: 2, windowMs: 100 });
  let mostWaiting = 0;
  server.on('connection', () => {
    mostWaiting = Math.max(mostWaiting, pacing.waiting());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const answers = await Promise.all(
    Array.from(
      { length: 40 },
      (_, i) =>
        new Promise<string>((resolve, reject) => {
          // agent: false, so each request is a connection (and a handshake) of its own.
          const req = request(
            { host: '127.0.0.1', port, path: `/${String(i)}`, ca: made.ca, servername: 'localhost', agent: false },
            (res) => {
              let body = '';
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => (body += chunk));
              res.on('end', () => {
                resolve(body);
              });
            },
          );
          req.on('error', reject);
          req.end();
        }),
    ),
  );
  assert.deepEqual(
    answers,
    Array.from({ length: 40 }, (_, i) => `/${String(i)}`),
  );
  assert.ok(mostWaiting > 0, 'some connections waited for their turn');
  assert.equal(pacing.refused(), 0);
});
