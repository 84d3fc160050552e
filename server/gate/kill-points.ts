import { KILL_POINTS, type KillHook, type KillPoint } from './gate.ts';

/**
 * The crash tests' hook: `INTERLOCK_KILL_AT=after_dispatch` makes the process SIGKILL itself the
 * first time it reaches that point, so a real restart has to recover from a real death. Unset,
 * there is no hook at all.
 */
export function killHookFromEnv(value: string | undefined, kill: () => void = () => process.kill(process.pid, 'SIGKILL')): KillHook | undefined {
  if (!value) return undefined;
  const wanted = new Set(value.split(',').map((s) => s.trim()));
  for (const name of wanted) {
    if (!(KILL_POINTS as readonly string[]).includes(name)) throw new Error(`INTERLOCK_KILL_AT: unknown kill point ${name}`);
  }
  return (point: KillPoint) => {
    if (wanted.has(point)) kill();
  };
}
