/**
 * A process's TCP connections to a loopback port, counted as `ss -tnp` would: its file
 * descriptors' socket inodes matched against /proc/net/tcp (Linux only; IPv4 loopback).
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** ESTABLISHED TCP sockets of process `pid` whose peer is 127.0.0.1:`port`; 0 when the process is gone. */
export function establishedTo(pid: number | 'self', port: number): number {
  const fdDir = `/proc/${String(pid)}/fd`;
  const inodes = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(fdDir);
  } catch {
    return 0;
  }
  for (const fd of fds) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`${fdDir}/${fd}`))?.[1];
      if (inode !== undefined) inodes.add(inode);
    } catch {
      // Closed between the listing and the read.
    }
  }
  const peer = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let count = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    // sl local_address rem_address st … inode (the 10th field); st 01 is ESTABLISHED.
    if (fields[2] === peer && fields[3] === '01' && inodes.has(fields[9] ?? '')) count++;
  }
  return count;
}
