import path from 'node:path';
import { afterAll, beforeAll, describe, type ExpectStatic, it } from 'vitest';
import type { EntryKind } from '../../shared/entries.ts';
import { GATE_KILL_POINTS, type KillPoint } from '../../server/gate/kill-points.ts';
import { effectIdFor } from '../../server/journal/hash.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { openCrashInterlock, submitRefund, writeReceipts } from '../support/crash-interlock.ts';
import {
  CRASH_CLAIM_TTL_MS,
  grantLease,
  makeCrashDir,
  readJournal,
  readReceipts,
  runChild,
  type SandboxProcess,
  startSandboxProcess,
  stopCrashProcesses,
  waitOutClaim,
} from '../support/crash-harness.ts';

// Every Interlock process here dies by a real SIGKILL at a named kill point (INTERLOCK_KILL_AT),
// with the Stripe sandbox in a process of its own that outlives it; a new process then recovers
// from what the journal file and Stripe hold, with nothing carried over in memory.

const PAYMENT_CENTS = 5_000;
const REFUND_CENTS = 2_000;
const HAND_REFUND_CENTS = 1_000;

let sandbox: SandboxProcess;
beforeAll(async () => {
  sandbox = await startSandboxProcess();
});
afterAll(stopCrashProcesses);

/** One scenario's world: its own journal file, payment intent and granted lease, on the shared sandbox. */
async function buildCrashWorld(name: string) {
  const dbFile = path.join(makeCrashDir(name), 'journal.sqlite');
  const intent = await sandbox.remote.createPaymentIntent(PAYMENT_CENTS);
  const leaseId = `L-${name}`;
  const requestKey = `case-${name}`;
  await grantLease(dbFile, leaseId, PAYMENT_CENTS);
  return {
    dbFile,
    sandboxUrl: sandbox.url,
    pi: intent.id,
    leaseId,
    requestKey,
    effectId: effectIdFor(requestKey),
    submitArgs: ['submit', intent.id, String(REFUND_CENTS), requestKey, leaseId],
  };
}
type CrashWorld = Awaited<ReturnType<typeof buildCrashWorld>>;

/** Run a child that must die by SIGKILL at `point`; resolves once its claim has run out. */
async function killAt(world: CrashWorld, args: string[], point: KillPoint, expect: ExpectStatic): Promise<void> {
  const result = await runChild(world, args, point);
  expect({ signal: result.signal, said: result.said }, result.stderr).toEqual({ signal: 'SIGKILL', said: null });
  await waitOutClaim(Date.now());
}

/** A child that must finish normally; what it printed. */
async function runToEnd(world: CrashWorld, args: string[], expect: ExpectStatic): Promise<Record<string, unknown>> {
  const result = await runChild(world, args);
  expect({ code: result.code, signal: result.signal }, result.stderr).toEqual({ code: 0, signal: null });
  return result.said!;
}

/** The refunds Stripe holds for the world's payment: ours (tagged with the effect id) or by hand, with amounts. */
async function ledgerOf(world: CrashWorld): Promise<string[]> {
  const refunds = await sandbox.remote.refunds(world.pi);
  return refunds.map((r) => `${r.metadata?.[EFFECT_METADATA_KEY] === world.effectId ? 'ours' : 'hand'}:${r.amount}`);
}

/** The same request again, from a healthy process (this one): what the gate answers. Receipts are re-signed after it. */
async function resubmit(world: CrashWorld): Promise<{ effectId: string; status?: string; error?: string }> {
  const interlock = openCrashInterlock({ dbFile: world.dbFile, sandboxUrl: world.sandboxUrl, claimTtlMs: CRASH_CLAIM_TTL_MS });
  try {
    const outcome = await submitRefund(interlock, { pi: world.pi, amountCents: REFUND_CENTS, requestKey: world.requestKey, leaseId: world.leaseId });
    await writeReceipts(interlock);
    return outcome;
  } finally {
    interlock.close();
  }
}

/** Every receipt next to the journal verifies with the published key; what each says happened. */
async function expectReceiptsVerify(world: CrashWorld, expect: ExpectStatic, happened: boolean | 'unknown'): Promise<void> {
  const { receipts, publicKey } = readReceipts(world.dbFile);
  const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  expect(receipts.map((r) => r.effect_id)).toEqual([world.effectId]);
  for (const receipt of receipts) {
    const report = await verifyReceipt(receipt, publicKeyPem);
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ valid: true, signed: true, happened, happened_once: true });
  }
}

type Outage = 'nothing' | 'hand_refund' | 'revoke';

interface CrashCase {
  /** Where the submitting process dies. */
  submitDiesAt: KillPoint;
  /** Where the first recovering process dies, if it does. */
  recoveryDiesAt: KillPoint | null;
  /** What the world does while nobody runs. */
  outage: Outage;
  /** The journal and the ledger right after the death. */
  kindsAfterDeath: EntryKind[];
  refundsAfterDeath: number;
  /** What the restarted process's recovery answers for the effect (null: nothing was in flight). */
  recovered: string | null;
  /** What the same request answers afterwards. */
  resubmitted: string;
  ledger: string[];
}

const ours = `ours:${REFUND_CENTS}`;
const hand = `hand:${HAND_REFUND_CENTS}`;
const dispatched: EntryKind[] = ['PROPOSED', 'AUTHORIZED', 'DISPATCHED'];

// One row per kill point, plus the two outages of the seed; the last columns are the expected statuses and ledger.
const CASES: Array<[string, CrashCase]> = [
  [
    'killed before_dispatch: nothing was sent or in flight, so recovery has nothing to do and a resubmit commits exactly one refund',
    { submitDiesAt: 'before_dispatch', recoveryDiesAt: null, outage: 'nothing', kindsAfterDeath: ['PROPOSED', 'AUTHORIZED'], refundsAfterDeath: 0, recovered: null, resubmitted: 'COMMITTED', ledger: [ours] },
  ],
  [
    'killed after_dispatch (before the send): the restart resends under the same key, COMMITTED_BY_RETRY, exactly one refund',
    { submitDiesAt: 'after_dispatch', recoveryDiesAt: null, outage: 'nothing', kindsAfterDeath: dispatched, refundsAfterDeath: 0, recovered: 'COMMITTED_BY_RETRY', resubmitted: 'DUPLICATE_IGNORED', ledger: [ours] },
  ],
  [
    'killed after_send (refund made, not recorded): the restart resends under the same key, Stripe replays it, exactly one refund',
    { submitDiesAt: 'after_send', recoveryDiesAt: null, outage: 'nothing', kindsAfterDeath: dispatched, refundsAfterDeath: 1, recovered: 'COMMITTED_BY_RETRY', resubmitted: 'DUPLICATE_IGNORED', ledger: [ours] },
  ],
  [
    'killed after_commit: the commit is durable, so recovery has nothing to do and a resubmit is DUPLICATE_IGNORED',
    { submitDiesAt: 'after_commit', recoveryDiesAt: null, outage: 'nothing', kindsAfterDeath: [...dispatched, 'COMMITTED'], refundsAfterDeath: 1, recovered: null, resubmitted: 'DUPLICATE_IGNORED', ledger: [ours] },
  ],
  [
    'killed after_send, then the recovery killed at recovery_resend: a third process recovers, exactly one refund',
    { submitDiesAt: 'after_send', recoveryDiesAt: 'recovery_resend', outage: 'nothing', kindsAfterDeath: dispatched, refundsAfterDeath: 1, recovered: 'COMMITTED_BY_RETRY', resubmitted: 'DUPLICATE_IGNORED', ledger: [ours] },
  ],
  [
    'killed after_dispatch, then a hand refund during the outage: REFUSED:stale_premise_at_recovery, only the hand refund',
    { submitDiesAt: 'after_dispatch', recoveryDiesAt: null, outage: 'hand_refund', kindsAfterDeath: dispatched, refundsAfterDeath: 0, recovered: 'REFUSED:stale_premise_at_recovery', resubmitted: 'REFUSED:stale_premise', ledger: [hand] },
  ],
  [
    'killed after_dispatch, then the grant revoked during the outage: REFUSED:lease_at_recovery, no refund',
    { submitDiesAt: 'after_dispatch', recoveryDiesAt: null, outage: 'revoke', kindsAfterDeath: dispatched, refundsAfterDeath: 0, recovered: 'REFUSED:lease_at_recovery', resubmitted: 'REFUSED:lease', ledger: [] },
  ],
];

// Each case runs three or four Node processes, several cases at once on two cores: give them room.
const CASE_TIMEOUT_MS = 60_000;

describe.concurrent('gate crash recovery with a real SIGKILL (journal file, grants, Stripe sandbox in its own process)', { timeout: CASE_TIMEOUT_MS }, () => {
  it('every kill point is exercised', ({ expect }) => {
    const points = new Set(CASES.flatMap(([, c]) => [c.submitDiesAt, ...(c.recoveryDiesAt ? [c.recoveryDiesAt] : [])]));
    expect([...points].sort()).toEqual([...GATE_KILL_POINTS].sort());
  });

  it.for(CASES)('%s', async ([name, c], { expect }) => {
    // seed: test_interlock.py test_crash_after_effect_recovers_once_after_restart,
    // test_human_refund_during_outage_is_refused_after_restart, test_permission_revoked_during_outage_is_refused_after_restart
    const world = await buildCrashWorld(`${c.submitDiesAt}-${c.recoveryDiesAt ?? 'none'}-${c.outage}`);
    await killAt(world, world.submitArgs, c.submitDiesAt, expect);
    const afterDeath = await readJournal(world.dbFile, world.effectId);
    expect(afterDeath.entries.map((e) => e.kind), name).toEqual(c.kindsAfterDeath);
    expect(await sandbox.remote.refunds(world.pi)).toHaveLength(c.refundsAfterDeath);

    if (c.outage === 'hand_refund') await sandbox.remote.handRefund(world.pi, HAND_REFUND_CENTS);
    if (c.outage === 'revoke') expect(await runToEnd(world, ['revoke', world.leaseId], expect)).toEqual({ ok: true });
    if (c.recoveryDiesAt !== null) await killAt(world, ['recover'], c.recoveryDiesAt, expect);

    const recovery = await runToEnd(world, ['recover'], expect);
    expect(recovery).toEqual({ recovered: c.recovered === null ? {} : { [world.effectId]: c.recovered } });
    const landed = c.ledger.includes(ours);
    expect((await readJournal(world.dbFile, world.effectId)).inFlight).toEqual([]);
    // The recovering process's own receipts (before_dispatch: nothing was sent yet, so nothing happened).
    await expectReceiptsVerify(world, expect, c.recovered === null && c.resubmitted === 'COMMITTED' ? false : landed);

    expect(await resubmit(world)).toEqual({ effectId: world.effectId, status: c.resubmitted });
    expect(await ledgerOf(world)).toEqual(c.ledger);
    expect((await readJournal(world.dbFile, world.effectId)).inFlight).toEqual([]);
    await expectReceiptsVerify(world, expect, landed);
  });
});
