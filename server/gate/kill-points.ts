/** Named points where a crash test may kill the process (`INTERLOCK_KILL_AT`). */
/** Where the gate can die: around a refund's send, and during a recovery's resend. */
export const GATE_KILL_POINTS = ['before_dispatch', 'after_dispatch', 'after_send', 'after_commit', 'recovery_resend'] as const;
/** Where the outbox can die: a message journaled but not attempted, sent but not recorded, recorded. */
export const OUTBOX_KILL_POINTS = ['outbox_before_attempt', 'outbox_after_send', 'outbox_after_record'] as const;
/** Every kill point. */
export const KILL_POINTS = [...GATE_KILL_POINTS, ...OUTBOX_KILL_POINTS] as const;
/** One kill point. */
export type KillPoint = (typeof KILL_POINTS)[number];

/** Called at each kill point; a crash test kills the process there, an experiment throws SimulatedCrash. */
export type KillHook = (point: KillPoint, effectId: string) => void | Promise<void>;

/**
 * The crash tests' hook: `INTERLOCK_KILL_AT=after_dispatch` makes the process SIGKILL itself the
 * first time it reaches that point, so a real restart has to recover from a real death. Unset,
 * there is no hook at all.
 */
export function killHookFromEnv(value: string | undefined, kill: () => void = () => process.kill(process.pid, 'SIGKILL')): KillHook | undefined {
  if (!value) return undefined;
  const wanted = new Set(value.split(',').map((s) => s.trim()));
  for (const name of wanted) {
    if (!KILL_POINTS.some((point) => point === name)) throw new Error(`INTERLOCK_KILL_AT: unknown kill point ${name}`);
  }
  return (point: KillPoint) => {
    if (wanted.has(point)) kill();
  };
}
