/**
 * Niceness of a whole process. On Linux the nice value is a thread's, not a process's
 * (setpriority(2), BUGS): `setPriority(pid)` renices the thread whose id is the pid, its main
 * thread, and leaves every other as it was. A Go program (kube-apiserver, etcd) runs its
 * goroutines on threads of its own, and Node runs garbage collection and the libuv pool on
 * others: reniced by its pid alone, such a process still takes the CPU at its old niceness for
 * most of its work. So each thread of /proc/PID/task is reniced; threads started later inherit the
 * niceness of the thread that starts them.
 */
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** A thread's niceness before `reniceProcess` changed it. */
export interface ThreadNiceness {
  readonly tid: number;
  readonly niceness: number;
}

function threadsOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${String(pid)}/task`)
      .map(Number)
      .filter(Number.isInteger);
  } catch {
    // No procfs (not Linux): the main thread is all that can be named.
    return [pid];
  }
}

/**
 * Sets every thread of `pid` below `niceness` to it (threads already nicer are left); returns
 * what each changed thread had, for `restoreNiceness`. Throws when the main thread cannot be set.
 */
export function reniceProcess(pid: number, niceness: number): ThreadNiceness[] {
  const was: ThreadNiceness[] = [];
  for (const tid of threadsOf(pid)) {
    try {
      const current = getPriority(tid);
      if (current >= niceness) continue;
      setPriority(tid, niceness);
      was.push({ tid, niceness: current });
    } catch (error) {
      // A thread gone meanwhile is no matter; the main thread's failure is the caller's.
      if (tid === pid) throw error;
    }
  }
  return was;
}

/** Gives each thread its niceness back (a thread gone, or a priority this process may not raise, is left). */
export function restoreNiceness(was: readonly ThreadNiceness[]): void {
  for (const { tid, niceness } of was) {
    try {
      setPriority(tid, niceness);
    } catch {
      // Gone, or giving back a higher priority needs a privilege this process lacks: nothing to do.
    }
  }
}
