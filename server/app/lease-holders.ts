import { readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

// Who holds a lease, as its holder names itself: `host:pid:random`, the host being where the pid
// means something. A holder of this host whose process is gone holds its leases for nobody, and
// server/app/work-leases.ts takes them over at once rather than waiting out their TTL.
//
// The host is the machine's name and, where the system tells it (Linux), its PID namespace: two
// containers sharing a host's name (host networking) see different processes under one pid, and
// must never judge each other's holders by their own process table.

let known: string | null = null;

/** This process's host, as holders name it: the host's name, with its PID namespace where there is one to read. */
export function thisHost(): string {
  known ??= readHost();
  return known;
}

function readHost(): string {
  let namespace = '';
  try {
    namespace = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '';
  } catch {
    // Not Linux, or /proc not mounted: the host's name alone.
  }
  return namespace === '' ? hostname() : `${hostname()}/pidns-${namespace}`;
}

/** The host and pid a holder names, or null for a name not in the `host:pid:random` form. */
export function holderPlace(holder: string): { host: string; pid: number } | null {
  const parts = holder.split(':');
  if (parts.length < 3) return null;
  const pidText = parts.at(-2)!;
  const pid = Number(pidText);
  if (!/^[1-9]\d*$/.test(pidText) || !Number.isSafeInteger(pid)) return null;
  return { host: parts.slice(0, -2).join(':'), pid };
}

/** Whether process `pid` exists: only ESRCH says it does not (EPERM is another user's live process). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return !(error instanceof Error && 'code' in error && error.code === 'ESRCH');
  }
}

/**
 * Whether `holder` is a process of this host that is gone: its host is `host`, its pid is not this
 * process's, and no process has that pid. Another host's holder, or a name of another form, is
 * never judged dead here.
 */
export function isDeadHolderHere(holder: string, host: string = thisHost(), alive: (pid: number) => boolean = pidAlive): boolean {
  const place = holderPlace(holder);
  if (place === null || place.host !== host || place.pid === process.pid) return false;
  return !alive(place.pid);
}
