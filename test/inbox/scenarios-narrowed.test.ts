import { vi } from 'vitest';

// The same inbox scenarios, with every inbox's sweeps (tick, executeApproved, refresh) narrowed
// by its own projection as the server wires them: narrowing must never change an outcome.
vi.mock('../support/inbox-world.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../support/inbox-world.ts')>();
  const { narrowWorld } = await import('../support/inbox-work.ts');
  return { ...original, buildInboxWorld: (options?: Parameters<typeof original.buildInboxWorld>[0]) => narrowWorld(original.buildInboxWorld(options)) };
});

await import('./scenarios-routing.test.ts');
await import('./scenarios-repair.test.ts');
await import('./scenarios-fixes.test.ts');
await import('./gaps.test.ts');
