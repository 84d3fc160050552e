// One Interlock process for test/crash/gate-crash.test.ts, killed for real at a named point.
// Usage: node --import tsx test/support/crash-child.ts <mode> [args...]
//   submit <pi> <amountCents> <requestKey> <leaseId>   read the facts, submit, print {effectId, status} (or {effectId, error})
//   recover                                            recover, print {recovered: {effectId: status}}
//   grant <leaseId> <maxCents> | revoke <leaseId>      change a grant, print {ok}
// Env: INTERLOCK_DB (the journal file), SANDBOX_URL, INTERLOCK_KILL_AT (kill points, comma separated),
// INTERLOCK_CLAIM_TTL_MS (1000 by default, so a restarted process can recover soon after a death).
// After submit and recover, every effect's signed receipt is written next to the database as
// receipt-<effectId>.json, signed with the key in that folder (created on first use).
import { killHookFromEnv } from '../../server/gate/kill-points.ts';
import { openCrashInterlock, submitRefund, writeReceipts } from './crash-interlock.ts';

const dbFile = process.env.INTERLOCK_DB;
const sandboxUrl = process.env.SANDBOX_URL;
if (!dbFile || !sandboxUrl) throw new Error('crash-child: INTERLOCK_DB and SANDBOX_URL are required');
const killHook = killHookFromEnv(process.env.INTERLOCK_KILL_AT);
const claimTtlMs = Number(process.env.INTERLOCK_CLAIM_TTL_MS ?? 1_000);
const interlock = openCrashInterlock({ dbFile, sandboxUrl, claimTtlMs, ...(killHook ? { killHook } : {}) });
const [mode, ...args] = process.argv.slice(2);

function say(message: unknown): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

switch (mode) {
  case 'submit': {
    const [pi, amount, requestKey, leaseId] = args;
    if (!pi || !amount || !requestKey || !leaseId) throw new Error('usage: submit <pi> <amountCents> <requestKey> <leaseId>');
    say(await submitRefund(interlock, { pi, amountCents: Number(amount), requestKey, leaseId }));
    await writeReceipts(interlock);
    break;
  }
  case 'recover':
    say({ recovered: Object.fromEntries(await interlock.gate.recover()) });
    await writeReceipts(interlock);
    break;
  case 'grant': {
    const [leaseId, maxCents] = args;
    if (!leaseId || !maxCents) throw new Error('usage: grant <leaseId> <maxCents>');
    await interlock.grants.grant(leaseId, { maxCents: Number(maxCents) });
    say({ ok: true });
    break;
  }
  case 'revoke': {
    const [leaseId] = args;
    if (!leaseId) throw new Error('usage: revoke <leaseId>');
    say({ ok: await interlock.grants.revoke(leaseId) });
    break;
  }
  default:
    throw new Error(`crash-child: unknown mode ${String(mode)}`);
}
interlock.close();
